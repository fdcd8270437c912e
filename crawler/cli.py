"""The `sitemap-crawler` command. Errors are caught here, once, and become exit codes, from the
one table of crawler/exit_codes.py (which --help shows, command by command).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import json
import os
import socket
import sys
import time
from collections.abc import Callable, Coroutine, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from crawler.compiled import compiled
from crawler.config import (
    SECRET_KEYS,
    Config,
    build,
    default_of,
    env_var,
    fields,
    from_env,
    load_toml,
    withhold_secrets,
)
from crawler.core.access import redact, secrets_of
from crawler.core.words import plural
from crawler.errors import (
    BlockedByBotProtection,
    ConfigError,
    InterruptedCrawl,
    NothingListedError,
    OutputError,
    PublishRefused,
    SitemapCrawlerError,
    SubmitLater,
    SubmitRefused,
)
from crawler.exit_codes import Exit, help_text
from crawler.shell.heap import fewer_collections, keep_heap
from crawler.shell.progress import AUDIT_WORDS, ProgressLine
from sitemap_out.errors import SitemapOutError

from . import __version__

if TYPE_CHECKING:
    from crawler.shell.upload import Uploader

T = TypeVar("T")


EXAMPLES = """\
examples:
  sitemap-crawler crawl https://example.com/docs/ -o out/
  sitemap-crawler crawl https://example.com/ --gzip --max-pages 100000 --report report.json
  sitemap-crawler crawl http://127.0.0.1:8080/ --public-url https://www.example.com/
  sitemap-crawler crawl -c nightly.toml
  sitemap-crawler crawl -c nightly.toml --log-format json --metrics /var/lib/node/sitemap.prom
  sitemap-crawler crawl -c nightly.toml \\
      --on-publish 'rsync -a "$SITEMAP_CRAWLER_PUBLISHED_DIR/" web:/srv/'

""" + help_text("crawl")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """One line, not argparse's usage block: errors in cron logs should be greppable."""
        self.exit(Exit.USAGE, f"{self.prog}: error: {message} (see --help)\n")


#: The crawl's options in --help, by what a user is looking for; a line each. Every config
#: key is in one group (a test checks), and `explain` takes only those marked as changing a
#: decision about one URL.
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "scope and URLs",
        (
            "sitemap_url", "public_url", "include", "exclude", "exclude_listing_only",
            "seed_sitemaps", "max_pages", "max_depth", "max_time", "strip_params",
            "listed_types", "follow_nofollow", "respect_noindex", "search_engines",
            "respect_canonical", "skip_duplicates", "max_redirects", "allowed_hosts",
        ),
    ),
    (
        "politeness",
        (
            "concurrency", "delay", "max_rps", "max_crawl_delay", "retries",
            "max_retry_after", "timeout", "user_agent",
        ),
    ),
    (
        "staging access",
        (
            "auth", "header", "cookie", "auth_origin", "proxy", "ca_bundle", "insecure",
            "robots_from", "resolve",
        ),
    ),
    (
        "output",
        (
            "output", "gzip", "format", "max_urls_per_file", "max_bytes_per_file", "groups",
            "changefreq", "lastmod", "priority_by_depth", "report", "decisions", "changes",
            "feed", "feed_days", "stylesheet", "stylesheet_url", "max_shrink", "max_error_rate",
            "max_bot_blocked", "force", "on_publish", "publish_to", "publish_endpoint",
            "publish_region", "llms_txt", "llms_txt_max_links", "cross_host",
        ),
    ),
    (
        "sitemap extensions",
        ("images", "image_hosts", "news_name", "news_language", "news_articles"),
    ),
    (
        "sites that need JavaScript",
        ("render", "render_timeout", "render_concurrency", "render_hosts", "chromium_path"),
    ),
    (
        "telling the operator and the search engines",
        (
            "on_failure", "notify_url", "notify_on_success", "notify_format", "submit",
            "google_key_file", "google_property", "bing_api_key", "bing_site",
        ),
    ),
    ("state and resume", ("state", "resume", "fresh")),
    ("logging", ("quiet", "log_format", "metrics")),
    (
        "advanced",
        (
            "workers", "max_page_bytes", "max_url_length", "max_segment_repeats",
            "max_pages_per_folder", "max_pages_per_param",
        ),
    ),
)  # fmt: skip

#: The options that change the decision about one URL: all `explain` accepts.
EXPLAIN_OPTIONS = frozenset(
    {
        "sitemap_url", "public_url", "include", "exclude", "exclude_listing_only",
        "strip_params", "listed_types", "respect_noindex", "search_engines",
        "respect_canonical", "max_redirects", "retries", "max_retry_after", "timeout",
        "user_agent", "auth", "header", "cookie", "auth_origin", "proxy", "ca_bundle",
        "insecure", "robots_from",
        "max_page_bytes", "max_url_length", "max_segment_repeats", "render",
        "render_timeout", "render_hosts", "chromium_path", "allowed_hosts", "resolve",
    }
)  # fmt: skip

EXPLAIN_EXAMPLES = """\
examples:
  sitemap-crawler explain https://example.com/docs/page.html
  sitemap-crawler explain -c nightly.toml https://example.com/docs/old/

""" + help_text("explain")

#: The options `robots` takes: who asks, and how robots.txt is reached.
ROBOTS_OPTIONS = frozenset(
    {
        "user_agent", "timeout", "retries", "max_retry_after", "auth", "header", "cookie",
        "auth_origin", "proxy", "ca_bundle", "insecure", "robots_from", "search_engines",
    }
)  # fmt: skip

ROBOTS_EXAMPLES = """\
examples:
  sitemap-crawler robots https://example.com/private/x https://example.com/a
  sitemap-crawler robots --user-agent 'Googlebot/2.1' https://example.com/a
  sitemap-crawler robots --user-agent 'Mozilla/5.0 (compatible; bingbot/2.0)' https://example.com/a
  sitemap-crawler robots --robots-from draft-robots.txt https://example.com/a https://other.org/b

""" + help_text("robots")
#: --engine-status: which engines, and how to reach them (as submit's); the audit's alone
ENGINE_STATUS_OPTIONS = frozenset(
    {"submit", "google_key_file", "google_property", "bing_api_key", "bing_site"}
)
#: The crawl options `audit` shares: what and how politely it fetches, never what a crawl
#: publishes. A config file's other keys are ignored.
AUDIT_OPTIONS = frozenset(
    {
        "user_agent", "concurrency", "delay", "max_rps", "timeout", "retries", "public_url",
        "auth", "header", "cookie", "auth_origin", "proxy", "ca_bundle", "insecure", "quiet",
        "strip_params", "render", "render_timeout", "render_concurrency", "render_hosts",
        "chromium_path", "robots_from", "max_crawl_delay", "max_retry_after",
        "max_bot_blocked",
        "allowed_hosts", "resolve",
    }
) | ENGINE_STATUS_OPTIONS  # fmt: skip

AUDIT_EXAMPLES = """\
examples:
  sitemap-crawler audit https://example.com/
  sitemap-crawler audit https://example.com/sitemap_index.xml --report audit.json
  sitemap-crawler audit out/sitemap.xml --no-fetch
  sitemap-crawler audit http://127.0.0.1:8080/ --public-url https://www.example.com/

""" + help_text("audit")


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; given `command` (_asked), only that command's parser gets
    its options: the others are there for the top level's help and its choice of command,
    and a run parses one command (#26: every command's options are 27 M instructions, 1% of
    a 3,000-page 304 night)."""
    top = _Parser(
        prog="sitemap-crawler",
        description="Crawl a website and publish its XML sitemap.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    build = "compiled" if compiled() else "not compiled"
    top.add_argument(
        "--version", action="version", version=f"sitemap-crawler {__version__} ({build})"
    )
    commands = top.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    crawl = commands.add_parser(
        "crawl",
        help="crawl a site and publish its sitemap",
        usage="%(prog)s [options] URL [URL ...]",
        epilog=EXAMPLES,
        formatter_class=_HelpFormatter,
        argument_default=argparse.SUPPRESS,
        description="Crawl the site under URL's folder and publish sitemap.xml to the output "
        "folder. More URLs seed the same crawl. Every option can also be set in a TOML file "
        "(-c), same names with underscores; the command line wins.",
    )
    if command in (None, "crawl"):
        crawl.add_argument(
            "url",
            nargs="*",
            metavar="URL",
            help="start URL; its folder is the scope (more URLs: more places to start from)",
        )
        _config_file_option(crawl)
        _add_config_options(crawl)
    explain = commands.add_parser(
        "explain",
        help="say whether one URL would be listed, and why",
        usage="%(prog)s [options] URL",
        epilog=EXPLAIN_EXAMPLES,
        formatter_class=_HelpFormatter,
        argument_default=argparse.SUPPRESS,
        description="Fetch one URL (and its robots.txt) and print the decision a crawl would "
        "make for it. The scope is the config's start URL (-c) if given, else the site's "
        "root (https://host/), as for a crawl from there; the first line says which. Only "
        "the options that change a decision are taken; a config file's other keys are "
        "ignored.",
    )
    if command in (None, "explain"):
        explain.add_argument("target", metavar="URL", help="the URL to judge")
        _config_file_option(explain)
        _add_config_options(explain, only=EXPLAIN_OPTIONS)
    _add_robots_command(commands, command in (None, "robots"))
    _add_audit_parser(commands, command in (None, "audit"))
    _add_diff_parser(commands, command in (None, "diff"))
    _add_job_parser(commands, command in (None, "job"))
    _add_submit_parser(commands, command in (None, "submit"))
    return top


def _asked(argv: Sequence[str]) -> str | None:
    """The command argv names: its first word that is not an option, as argparse reads it
    (the top level's options, --help and --version, take no value)."""
    return next((word for word in argv if not word.startswith("-")), None)


def _config_file_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-c", "--config", type=Path, metavar="CONFIG.toml", help="read settings from this TOML file"
    )


#: The keys the job sets itself, from --data: it takes every other.
JOB_SETS = frozenset({"output", "state", "resume", "report", "decisions", "changes"})
#: The job's config file when -c is not given: $SITEMAP_CRAWLER_CONFIG, else this if present.
JOB_CONFIG = Path("/config/sitemap-crawler.toml")

JOB_EXAMPLES = """\
examples:
  sitemap-crawler job                      # /config/sitemap-crawler.toml, env, into /data
  SITEMAP_CRAWLER_URL=https://example.com/ sitemap-crawler job --data /srv/sitemap
  sitemap-crawler job --sites sites.txt --index 3 --data /data

layout: DIR/out (published), DIR/state/crawl.sqlite, DIR/state/last-report.json,
        DIR/state/last-decisions.jsonl, DIR/state/last-changes.json; with --sites:
        DIR/sites/<host[_port][_path]>/out and .../state

""" + help_text("job")


def _add_job_parser(commands: Any, whole: bool = True) -> None:
    job = commands.add_parser(
        "job",
        help="the nightly job: resume a stopped crawl, else crawl afresh, under one folder",
        usage="%(prog)s [options] [URL ...]",
        epilog=JOB_EXAMPLES,
        formatter_class=_HelpFormatter,
        argument_default=argparse.SUPPRESS,
        description="Crawl and publish as `crawl` does, with the output, state, report and "
        "decisions under one data folder. When the state holds a crawl of the same settings "
        "that stopped before its end (SIGTERM, killed, out of memory), it is resumed; "
        "otherwise a fresh crawl starts. Settings: the command line over SITEMAP_CRAWLER_* "
        f"variables over the config file (-c, $SITEMAP_CRAWLER_CONFIG, else {JOB_CONFIG} "
        "when present).",
    )
    if not whole:  # not the command asked: its line in the top level's help only
        return
    job.add_argument("url", nargs="*", metavar="URL", help="start URL (and more seeds)")
    _config_file_option(job)
    only = job.add_argument_group("job")
    only.add_argument(
        "--data", dest="job_data", type=Path, metavar="DIR", default=Path("/data"),
        help="the folder holding out/ and state/ (default: /data)",
    )  # fmt: skip
    only.add_argument(
        "--sites", dest="job_sites", type=Path, metavar="FILE", default=None,
        help="a list of sites, one start URL a line: crawl the one at --index, under "
        "DIR/sites/<its folder>",
    )  # fmt: skip
    only.add_argument(
        "--index", dest="job_index", type=int, metavar="N", default=None,
        help="the line of --sites to crawl, from 0 (default: $JOB_COMPLETION_INDEX)",
    )  # fmt: skip
    _add_config_options(job, only=frozenset(f.name for f in fields()) - JOB_SETS)


def _job(args: argparse.Namespace, secrets: list[str]) -> int:
    """`job`: the settings as crawl's, the paths from --data, and --resume when the state
    holds a stopped crawl of these settings (asked of the state file itself)."""
    from crawler.config import fingerprint
    from crawler.core.fleet import index_of, parse_sites, pick
    from crawler.shell.outputs import ensure_free
    from crawler.shell.state import CrawlState

    given = dict(vars(args))
    data: Path = given.pop("job_data")
    sites, index = given.pop("job_sites"), given.pop("job_index")
    if "config" not in given:
        named = os.environ.get("SITEMAP_CRAWLER_CONFIG")
        if named or JOB_CONFIG.is_file():
            given["config"] = Path(named) if named else JOB_CONFIG
    if sites is not None:
        if given.get("url"):
            raise ConfigError("give --sites or start URLs, not both")
        try:
            text = sites.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or exc
            raise ConfigError(f"cannot read sites file {sites}: {reason}") from None
        line = index_of(index, os.environ)
        url, folder = pick(parse_sites(text), line, str(sites))
        given["url"], data = [url], data / "sites" / folder
        _LOG.labels = {"index": str(line)}  # the site's line, next to the site label
    elif index is not None:
        raise ConfigError("--index needs --sites FILE: the list of sites it indexes")
    given.update(
        output=data / "out",
        state=data / "state" / "crawl.sqlite",
        report=data / "state" / "last-report.json",
        decisions=data / "state" / "last-decisions.jsonl",
        changes=data / "state" / "last-changes.json",
    )
    args.output_folder = data / "out"  # named by a failure to write there
    config = load_config(argparse.Namespace(**given))
    secrets += config.secrets
    assert config.state is not None
    # decided before the start event, whose settings must say whether this run resumes: with
    # JSON logs they are the only record of it (peek only reads, and a missing file is False);
    # --fresh: nothing of the state is used, not even a stopped crawl
    config.resume = not config.fresh and CrawlState.peek(config.state, fingerprint(config))
    # a state file an older version wrote: a crawl refuses it, the nightly job starts afresh
    outdated = not config.fresh and CrawlState.outdated(config.state)
    config.fresh = config.fresh or outdated
    _start(config, secrets)  # JSON logs and --metrics, as for crawl
    for made in (config.output, config.state.parent):
        _writable_folder(made)
    ensure_free(config.output)  # busy: refused before saying what this run would do
    if not config.quiet:  # a log event with JSON logs
        if config.resume:
            _err(f"job: resuming the stopped crawl saved in {config.state}")
        elif outdated:
            _err(
                f"job: crawling {config.url} afresh: {config.state} was written by another "
                "version of sitemap-crawler, so its history is not used"
            )
        elif config.fresh:
            _err(f"job: crawling {config.url} afresh, ignoring its history (--fresh)")
        elif config.state.exists():
            _err(f"job: crawling {config.url}, from its history in {config.state}")
        else:
            _err(f"job: crawling {config.url}, a first run: its history will be {config.state}")
    try:
        return _crawl(config)
    except InterruptedCrawl as exc:  # the crawl's hint names crawl's options, not the job's
        hint = f" (--state {config.state} --resume goes on from here)"
        text = str(exc)
        if not text.endswith(hint):
            raise
        raise InterruptedCrawl(text.removesuffix(hint) + "; the next job run resumes it") from None


def _add_robots_command(commands: Any, whole: bool = True) -> None:
    robots = commands.add_parser(
        "robots",
        help="test URLs against robots.txt: allowed or blocked, by which group and line",
        usage="%(prog)s [options] URL [URL ...]",
        epilog=ROBOTS_EXAMPLES,
        formatter_class=_HelpFormatter,
        argument_default=argparse.SUPPRESS,
        description="Fetch the robots.txt of each URL's origin (once per origin, as a crawl "
        "does: RFC 9309's rules for redirects, 4xx and 5xx) and say for each URL whether the "
        "user agent may fetch it, the group that applied and the rule that decided, with its "
        "line; then each robots.txt's Crawl-delay and Sitemap lines. Only the URLs' origins "
        "are contacted; credentials go to the first URL's origin only.",
    )
    if not whole:  # not the command asked: its line in the top level's help only
        return
    robots.add_argument("target", nargs="+", metavar="URL", help="absolute http(s) URL to test")
    robots.add_argument(
        "--token",
        metavar="TOKEN",
        help="the robots.txt product token to test (default: the one after 'compatible;' in "
        "a browser-style --user-agent, else its first word)",
    )
    _config_file_option(robots)
    _add_config_options(
        robots,
        only=ROBOTS_OPTIONS,
        helps={
            "robots_from": "test the rules at this URL or in this file instead of each "
            "site's robots.txt (URLs of any origin)"
        },
    )
    _old_spelling(robots, "--robots", "--robots-from", dest="robots_from")


def _add_audit_parser(commands: Any, whole: bool = True) -> None:
    audit = commands.add_parser(
        "audit",
        help="check a site's sitemaps before a search engine does",
        usage="%(prog)s [options] TARGET",
        epilog=AUDIT_EXAMPLES,
        formatter_class=_HelpFormatter,
        argument_default=argparse.SUPPRESS,
        description="Read the sitemaps at TARGET (a local file, a sitemap URL, or a site URL "
        "whose sitemaps are found through robots.txt, else sitemap.xml, sitemap_index.xml, "
        "sitemap.xml.gz, sitemap.txt) and report what a search engine would complain about: "
        "the files, then the URLs they list, fetched politely like a crawl.",
    )
    if not whole:  # not the command asked: its line in the top level's help only
        return
    audit.add_argument("target", metavar="TARGET", help="a sitemap file or URL, or a site URL")
    _config_file_option(audit)
    only = audit.add_argument_group("audit")
    only.add_argument(
        "--no-fetch",
        dest="audit_no_fetch",
        action="store_true",
        default=False,
        help="check the files only: no listed URL is fetched",
    )
    only.add_argument(
        "--crawl",
        dest="audit_crawl",
        action="store_true",
        default=False,
        help="also crawl the site and compare it with the sitemaps",
    )
    only.add_argument(
        "--report",
        dest="audit_json",
        type=Path,
        metavar="FILE",
        default=None,
        help="write the summary and every finding as JSON",
    )
    _old_spelling(audit, "--json", "--report", dest="audit_json", type=Path)
    only.add_argument(
        "--html",
        dest="audit_html",
        type=Path,
        metavar="FILE",
        default=None,
        help="write the audit as one self-contained HTML page",
    )
    only.add_argument(
        "--fail-on", dest="audit_fail_on", choices=("error", "warning", "notice"),
        default="error", help="exit 1 on a finding this bad or worse (default: error)",
    )  # fmt: skip
    only.add_argument(
        "--engine-status", dest="audit_engines", action="store_true", default=False,
        help="also print what the search engines of --submit last said about the sitemaps "
        "(as submit --status)",
    )  # fmt: skip
    _add_config_options(
        audit,
        only=AUDIT_OPTIONS,
        helps={
            "public_url": "the public origin the sitemap's locs name; they are fetched from "
            "TARGET's server (a staging copy) instead",
            "submit": "the engines --engine-status asks: google, bing",
            "max_bot_blocked": "stop checking URLs (one blocked_by_bot_protection finding) "
            "when a CDN's bot protection answers more than this fraction of the requests, "
            "once 20 were made; 1: never (default: 0.2)",
        },
    )


def _old_spelling(parser: argparse.ArgumentParser, old: str, new: str, **kwargs: Any) -> None:
    """`old`, a hidden alias of `new` for one release, saying so when used: one name for one
    thing in every command (--report, --robots-from), without breaking a script at once."""

    class Renamed(argparse.Action):
        def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
            _err(f"warning: {old} is now {new}; {old} goes in the next release")
            setattr(namespace, self.dest, values)

    parser.add_argument(old, action=Renamed, help=argparse.SUPPRESS, **kwargs)


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Option help one line wide where the terminal allows: a grouped list is read by eye."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=32)


def _add_config_options(
    parser: argparse.ArgumentParser,
    only: frozenset[str] | None = None,
    helps: dict[str, str] | None = None,
) -> None:
    """The config keys as flags, by group. `helps`: a subcommand's own words for a key that
    means something else there."""
    short = {"output": "-o", "quiet": "-q"}
    specs = {spec.name: spec for spec in fields() if spec.name != "url"}
    for title, names in GROUPS:
        group = parser.add_argument_group(title)
        for name in names:
            spec = specs.get(name)
            if spec is None or (only is not None and name not in only):
                continue
            flags = [f"--{spec.name.replace('_', '-')}"]
            if spec.name in short:
                flags.insert(0, short[spec.name])
            kwargs = _argument(spec)
            if helps and name in helps:
                kwargs["help"] = helps[name]
            group.add_argument(*flags, **kwargs)


def _argument(spec: dataclasses.Field) -> dict[str, Any]:
    meta = spec.metadata
    kind = str(spec.type)
    kwargs: dict[str, Any] = {"help": meta["help"] + _default_text(spec), "dest": spec.name}
    if kind == "bool":
        kwargs["action"] = argparse.BooleanOptionalAction
    else:
        kwargs["metavar"] = meta["metavar"]
        if meta["choices"]:
            kwargs["choices"] = meta["choices"]
        if kind.startswith("tuple") and meta["repeat"]:
            kwargs["action"] = "append"  # repeatable: the command line's list replaces the file's
        elif kind.startswith("tuple"):
            kwargs["type"] = _comma_list
            kwargs["metavar"] = f"{meta['metavar']},..."
        elif kind.startswith("int"):
            kwargs["type"] = int
        elif kind.startswith("float"):
            kwargs["type"] = float
    return kwargs


def _default_text(spec: dataclasses.Field) -> str:
    """' (default: ...)' for --help; argparse's own cannot show it, as unset options are
    suppressed so that the config file can supply them."""
    default = default_of(spec)
    if default is None or spec.name in ("user_agent",):
        return ""
    if isinstance(default, bool):
        return " (default: on)" if default else ""
    if isinstance(default, tuple):
        return f" (default: {','.join(default)})" if default else ""
    return f" (default: {default})"


def _comma_list(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def load_config(
    args: argparse.Namespace,
    only: frozenset[str] | None = None,
    target: str | None = None,
    *,
    say: bool = True,
) -> Config:
    """Defaults < the TOML file (-c) < the command line. `only`: the keys taken from the
    file (explain ignores a crawl's output and politeness settings). `target`: the URL the
    command sends its requests to (default: the url): the file's and the environment's
    credentials are withheld from another origin than theirs, in a line unless not `say`."""
    values = dict(vars(args))
    values.pop("command", None)
    values.pop("target", None)
    path = values.pop("config", None)
    urls = values.pop("url", None)
    if isinstance(urls, list | tuple):  # the positional URLs: the start, then more seeds
        if urls:
            values["url"] = urls[0]
        if len(urls) > 1:
            values["seeds"] = tuple(urls[1:])
    elif urls is not None:
        values["url"] = urls
    file_values = load_toml(path) if path is not None else {}
    env_values = from_env(os.environ)  # SITEMAP_CRAWLER_<KEY>: over the file, under argv
    if only is not None:
        file_values = {k: v for k, v in file_values.items() if k in only or k == "url"}
        env_values = {k: v for k, v in env_values.items() if k in only or k == "url"}
    config = _build_layers(file_values, env_values, values)
    layers = ((file_values, lambda key: f"{key} in {path}"), (env_values, env_var))
    note = withhold_secrets(config, layers, values, target or config.url or "")
    if note is not None and say and note not in _LOG.said:
        _LOG.said |= {note}  # once a run: the audit builds a config per sitemap
        _err(note)
    return config


def _build_layers(
    file_values: dict[str, Any], env_values: dict[str, Any], values: dict[str, Any]
) -> Config:
    """File < environment < command line; a value the environment gave that fails
    validation is named by its variable (SITEMAP_CRAWLER_CONCURRENCY must be ...)."""
    try:
        return build({**file_values, **env_values}, values)
    except ConfigError as exc:
        message = str(exc)
        for key in env_values.keys() - values.keys():
            if message.startswith(f"{key} ") and not message.startswith(f"{key} ("):
                raise ConfigError(env_var(key) + message[len(key) :]) from None
        raise


def _given_secrets(args: argparse.Namespace) -> list[str]:
    """The secrets on the command line and in the environment, before any is checked: an
    error about a bad config must not print them either."""
    given = vars(args)
    env = {key: os.environ.get(env_var(key)) or "" for key in SECRET_KEYS}
    return [
        *secrets_of(
            given.get("auth"),
            given.get("header") or (),
            given.get("cookie") or (),
            given.get("proxy"),
        ),
        *secrets_of(  # read raw, before any is checked; header and cookie: one a line
            env["auth"] or None,
            env["header"].splitlines(),
            env["cookie"].splitlines(),
            env["proxy"] or None,
        ),
        *(  # whole values: a webhook's URL is its own password, as an API key is
            value
            for key in ("notify_url", "bing_api_key")
            for value in (given.get(key), env[key].strip(), env[key])
            if value
        ),
    ]


def _warn_insecure(config: Config) -> None:
    """Said even with --quiet: a crawl that checks no certificate is worth a line in a log."""
    if config.insecure:
        _err(
            "warning: --insecure: TLS certificates are not checked; anyone between here and "
            "the site can read and change what the crawl sees"
        )


def _writable_folder(folder: Path) -> None:
    """Make `folder` (and its parents) or fail with one line naming it and what to do: a
    host folder mounted at /data is often owned by another user than the one running."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if os.access(folder, os.W_OK | os.X_OK):
            return
        reason = "Permission denied"
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        if exc.filename and Path(exc.filename) != folder:
            folder = Path(exc.filename)
        if isinstance(exc, PermissionError):  # name the folder it could not make one in
            while not folder.exists() and folder.parent != folder:
                folder = folder.parent
    who = f"uid {os.getuid()} gid {os.getgid()}" if hasattr(os, "getuid") else "this user"
    raise OutputError(
        f"cannot use the data folder {folder} ({reason}): it must be a folder writable by "
        f"{who}; chown it, or run as its owner (docker run --user UID:GID)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser(_asked(sys.argv[1:] if argv is None else argv))
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return Exit.USAGE
    _LOG.json = args.command in ("crawl", "job") and vars(args).get("log_format") == "json"
    _LOG.figures, _LOG.metrics, _LOG.began = None, None, time.monotonic()
    _LOG.said = frozenset()
    _LOG.labels = {}
    _LOG.command, _LOG.reason, _LOG.notify, _LOG.args = args.command, None, None, args
    return _finish(_command(args))


def _command(args: argparse.Namespace) -> int:
    secrets = _given_secrets(args)  # and the config file's, once read: never printed
    try:
        if args.command == "robots":
            return _robots_command(args, secrets)
        if args.command == "explain":
            return _explain(args, secrets)
        if args.command == "audit":
            return _audit(args, secrets)
        if args.command == "diff":
            return _diff(args, secrets)
        if args.command == "job":
            return _job(args, secrets)
        if args.command == "submit":
            return _submit_command(args, secrets)
        config = load_config(args)
        secrets += config.secrets
        args.output_folder = config.output  # named by a failure to write there
        _start(config, secrets)
        return _crawl(config)
    except KeyboardInterrupt:  # before the crawl's own signal handling is in place
        _err("interrupted; the previously published sitemap is untouched", Exit.INTERRUPTED)
        return Exit.INTERRUPTED
    except (SitemapCrawlerError, SitemapOutError) as exc:
        code = getattr(exc, "exit_code", Exit.FAILURE)
        _err(redact(str(exc), secrets), code)
        return code
    except OSError as exc:
        if isinstance(exc, ConnectionError | TimeoutError | socket.gaierror):
            return _unexpected(exc, secrets)  # the network's: caught where they occur
        # our own files: the sitemap's, in the output folder (the others name themselves)
        where = exc.filename or getattr(args, "output_folder", None) or "the output folder"
        reason = exc.strerror or str(exc) or type(exc).__name__
        _err(f"cannot write {where}: {reason}; the published sitemap is untouched", Exit.IO)
        return Exit.IO
    except Exception as exc:  # the one place an unexpected error is turned into a line
        return _unexpected(exc, secrets)


def _unexpected(exc: Exception, secrets: Sequence[str] = ()) -> int:
    if os.environ.get("SITEMAP_CRAWLER_DEBUG"):
        raise exc
    _err(
        redact(
            f"unexpected failure: {type(exc).__name__}: {exc} "
            f"(set SITEMAP_CRAWLER_DEBUG=1 for a traceback)",
            secrets,
        ),
        Exit.FAILURE,
    )
    return Exit.FAILURE


def _crawl(config: Config) -> int:
    from crawler.shell.after_publish import Steps as AfterPublish
    from crawler.shell.engine import Crawl  # late: keeps --help and config errors fast
    from crawler.shell.host_output import robots_line
    from crawler.shell.pool import worker_processes

    _warn_insecure(config)
    if config.stylesheet and config.format == "txt":
        _err(
            "warning: stylesheet: a text sitemap (format = txt) names no stylesheet; "
            "none is published"
        )
    credentials = None
    if config.submit:  # a key file that is no key fails now, not after the crawl; read once
        from crawler.shell.submit import Settings, check_ready

        credentials = check_ready(Settings.of(config))
    progress = None
    if not config.quiet:
        progress = ProgressLine(
            sys.stderr, tty=sys.stderr.isatty(), json_lines=config.log_format == "json"
        )
    log = (lambda _: None) if progress is None else progress.log
    crawl = Crawl(config, log, progress)
    uploader = _uploader(config)  # before the crawl: a bucket that cannot be opened fails now
    figures: dict[str, Any] = {"start_url": config.url, "published": False}
    _LOG.figures = lambda: crawl.tally.to_json(figures)
    try:
        # before the event loop and any thread or socket; or later, on a night with a history
        count = _worker_count(config)
        later = count > 0 and _revalidates(config, crawl.plan.start)
        with worker_processes(count, spawn_later=later) as spares:
            result = _run(crawl.run(spares))
    except (NothingListedError, InterruptedCrawl, PublishRefused, BlockedByBotProtection) as exc:
        if config.report is not None:  # why nothing was published is what a report is for
            failed: dict[str, Any] = {
                "start_url": config.url,
                "published": False,
                "error": redact(str(exc), config.secrets),
            }
            _write_json(config.report, crawl.tally.to_json(failed))
        raise
    tally = result.tally
    figures.update(
        published=True,
        sitemap_url=result.sitemap_url,
        files=[str(p) for p in result.published.files],
    )
    if not config.quiet and not _LOG.json:  # JSON logs: the summary event says it all
        print(tally.summary())
        if (hint := tally.foreign.hint()) is not None:
            print(hint)
        print(
            f"published {plural(result.published.url_count, 'URL')} in "
            f"{plural(len(result.published.files), 'file')} to {config.output}"
        )
        if len(result.robots_lines) > 1:  # allowed_hosts: each host's robots.txt its line
            for line in map(robots_line, result.robots_lines):
                print(line, flush=True)
        else:
            print(f"add this line to robots.txt:  Sitemap: {result.sitemap_url}", flush=True)
        if result.published.feed_url is not None:
            print(f"changes feed (submit it as a sitemap too): {result.published.feed_url}")
        if result.published.llms_url is not None:
            print(f"llms.txt (for language models): {result.published.llms_url}")
    for name in tally.empty_groups():
        _err(
            f"warning: group {name!r} matched no listed URL (its patterns match the path and"
            " query as the sitemap lists them, e.g. /blog/*)"
        )
    steps = AfterPublish(config, uploader, credentials, warn=_err, note=_quiet_or(config))
    after = steps.run(result, figures)  # upload, --on-publish, submit: 7, 6, 9
    if config.report is not None:
        try:
            _write_json(config.report, tally.to_json(figures))
        except OutputError as exc:
            raise OutputError(
                f"published {plural(result.published.url_count, 'URL')} to {config.output}, "
                f"but {exc}"
            ) from None
    if after is not None:
        raise after
    return Exit.OK


def _quiet_or(config: Config) -> Callable[[str], None] | None:
    """Where a crawl's outcome lines go: nowhere with --quiet, else _note."""
    return None if config.quiet else _note


def _note(line: str) -> None:
    """A line of the command's outcome: stdout, or a log event with JSON logs."""
    if _LOG.json:
        _err(line)
    else:
        print(line, flush=True)


#: The options `submit` takes: which engines, how to reach them, and where the sitemap is.
SUBMIT_OPTIONS = frozenset(
    {
        "submit", "google_key_file", "google_property", "bing_api_key", "bing_site",
        "sitemap_url", "public_url", "timeout", "quiet",
    }
)  # fmt: skip

SUBMIT_EXAMPLES = """\
examples:
  sitemap-crawler submit --submit google --google-key-file sa.json https://www.example.com/sitemap.xml
  sitemap-crawler submit -c nightly.toml              # its submit, url, sitemap_url
  sitemap-crawler submit -c nightly.toml --status     # what each engine last said

""" + help_text("submit")


def _add_submit_parser(commands: Any, whole: bool = True) -> None:
    submit = commands.add_parser(
        "submit",
        help="submit a published sitemap to Google Search Console and Bing Webmaster Tools, "
        "or read back what they last said of it",
        usage="%(prog)s [options] [SITEMAP_URL ...]",
        epilog=SUBMIT_EXAMPLES,
        formatter_class=_HelpFormatter,
        argument_default=argparse.SUPPRESS,
        description="Submit each sitemap to each engine named by --submit (google: Search "
        "Console's Sitemaps API, as a service account; bing: Bing Webmaster Tools' API, with "
        "an API key), or with --status print what each last said about it: when it was read, "
        "errors, warnings, URLs per type. The sitemap must be published (served) already.",
    )
    if not whole:  # not the command asked: its line in the top level's help only
        return
    submit.add_argument(
        "sitemaps", nargs="*", metavar="SITEMAP_URL",
        help="the published sitemap's public URL (default: the config's sitemap_url, else "
        "<start folder>/sitemap.xml of its url)",
    )  # fmt: skip
    _config_file_option(submit)
    only = submit.add_argument_group("submit")
    only.add_argument(
        "--status", dest="submit_status", action="store_true", default=False,
        help="print what each engine last said about each sitemap instead of submitting",
    )  # fmt: skip
    _add_config_options(
        submit,
        only=SUBMIT_OPTIONS,
        helps={"submit": "the engines to submit to, or ask: google, bing (default: the config's)"},
    )


def _submit_command(args: argparse.Namespace, secrets: list[str]) -> int:
    from crawler.core.screen import Plan
    from crawler.core.submissions import line
    from crawler.core.urls import normalize
    from crawler.shell import submit

    given = dict(vars(args))
    sitemaps = [normalize(url) for url in given.pop("sitemaps", [])]  # bad: exit 2, no request
    status = given.pop("submit_status")
    configured = from_env(os.environ).get("url")
    if configured is None and "config" in given:
        configured = load_toml(given["config"]).get("url")
    if configured is None and not sitemaps:
        raise ConfigError(
            "no sitemap: give its URL, or a config (-c, SITEMAP_CRAWLER_URL) whose url or "
            "sitemap_url says where it is published"
        )
    config = load_config(
        argparse.Namespace(**given, url=configured or sitemaps[0]), only=SUBMIT_OPTIONS
    )
    secrets += config.secrets
    if not config.submit:
        raise ConfigError(
            'no engine to submit to: --submit google,bing, or submit = ["google", "bing"] '
            "in the config"
        )
    credentials = submit.check_ready(submit.Settings.of(config))
    if not sitemaps:
        assert config.url is not None
        plan = Plan.make(config.url, config.public_url, config.sitemap_url)
        sitemaps = [plan.sitemap_url]
    say = (lambda _: None) if config.quiet else print
    statuses, refusals = _run(
        submit.run(
            submit.Settings.of(config), sitemaps, status=status, say=say, credentials=credentials
        )
    )
    for found in statuses:
        print(line(found))
    if refusals:
        error = SubmitLater if all(r.later for r in refusals) else SubmitRefused
        raise error("; ".join(str(refusal) for refusal in refusals))
    return Exit.NO if any(found.has_errors for found in statuses) else Exit.OK


def _uploader(config: Config) -> Uploader | None:
    """publish_to's Uploader, or None without publish_to."""
    if config.publish_to is None:
        return None
    from crawler.shell.upload import Uploader

    return Uploader(config.publish_to, config.publish_endpoint, config.publish_region)


def _worker_count(config: Config) -> int:
    """Worker processes for a crawl (or an audit's URL checks) with this config."""
    from crawler.shell.pool import default_workers

    workers = default_workers() if config.workers < 0 else config.workers
    workers = min(workers, config.concurrency)  # each worker holds one request at least
    if config.delay or config.max_rps:
        workers = 0  # spaced requests: a crawl that waits is not CPU-bound
    if config.render != "never":
        workers = 0  # the browser is the bottleneck, and it renders in this process
    return workers


def _revalidates(config: Config, start: str) -> bool:
    """Whether the crawl asks its pages conditionally (a state file with a history of this
    start URL's, and no --fresh): its worker processes are then spawned once pages change,
    not forked now (crawler.shell.pool). An unchanged night makes every page itself, and a
    forked worker it never starts cost it the pages it writes after the fork."""
    from crawler.shell.state import CrawlState

    return (
        config.state is not None
        and not config.fresh
        and CrawlState.revalidates(config.state, start)
    )


def _explain(args: argparse.Namespace, secrets: list[str]) -> int:
    from crawler.core.decide import LISTED, REASON_TEXT
    from crawler.core.urls import join_parts, normalize
    from crawler.shell.engine import Crawl
    from crawler.shell.explain import explain, walled_lines

    configured, scope_is = from_env(os.environ).get("url"), "the start URL of $SITEMAP_CRAWLER_URL"
    if configured is None and "config" in vars(args):
        configured, scope_is = load_toml(args.config).get("url"), f"the start URL of {args.config}"
    if configured:
        args.url = configured
    else:  # as a crawl from the site's root, the usual one, would judge it
        args.url = join_parts(normalize(args.target))[1] + "/"
        scope_is = "the site's root; -c CONFIG for a crawl's own"
    config = load_config(args, only=EXPLAIN_OPTIONS, target=args.target)
    secrets += config.secrets
    _warn_insecure(config)
    crawl = Crawl(config)
    print(f"scope: {crawl.plan.scope_text()} ({scope_is})")
    known = crawl.plan.public(crawl.known_as(args.target))
    if known != crawl.plan.public(normalize(args.target)):
        print(f"a crawl knows this URL as {known} (strip_params removes the rest)")
    records = _run(explain(crawl, args.target))
    for record in records:
        status = f"HTTP {record.status}" if record.status is not None else "not fetched"
        print(f"{record.url}  ({status})")
        print(f"  {REASON_TEXT[record.reason]}" + (f": {record.detail}" if record.detail else ""))
    listed = len(records) == 1 and records[0].reason == LISTED
    if (hint := crawl.tally.foreign.hint()) is not None:
        print(f"  {hint}")
    for line in walled_lines(crawl):  # a bot wall, not the site, answered
        print(f"  {line}")
    # one general note: what only a whole crawl knows (the links to the URL, its twins)
    unknown: list[str] = []
    if config.skip_duplicates:
        unknown.append("a byte-identical page has a better URL (/ for /index.html)")
    if not config.follow_nofollow:
        unknown.append("only rel=nofollow links lead to it (a crawl follows none)")
    if listed and unknown:
        print(
            f"  (judged on its own: a crawl leaves it out if {' or if '.join(unknown)}, "
            "which only a whole crawl can tell)"
        )
    elif len(records) > 1 and records[-1].reason == LISTED:
        print(f"  (the sitemap would list {records[-1].url} instead)")
    return Exit.OK if listed else Exit.NOTHING


def _robots_command(args: argparse.Namespace, secrets: list[str]) -> int:
    from crawler.config import robots_from_is_url
    from crawler.core.robots_check import check, exit_code, report, tester_token
    from crawler.core.urls import normalize
    from crawler.shell.robots_check import (
        origin_of,
        read_file_source,
        read_sources,
        read_url_source,
    )

    given = dict(vars(args))
    targets: list[str] = given.pop("target")
    token_given: str | None = given.pop("token", None)
    urls = [normalize(target) for target in targets]  # a bad one: exit 2 before any request
    config = load_config(argparse.Namespace(**given, url=urls[0]), only=ROBOTS_OPTIONS)
    secrets += config.secrets
    token, how = tester_token(config.user_agent, token_given)
    engines = config.search_engines
    rules_from = config.robots_from
    if rules_from is not None:
        if robots_from_is_url(rules_from):
            _warn_insecure(config)
            source = _run(read_url_source(rules_from, urls, config))
        else:
            source = read_file_source(Path(rules_from))
        checks = [check(url, source, token, engines) for url in urls]
    else:
        _warn_insecure(config)
        sources = _run(read_sources(urls, config))
        checks = [check(url, sources[origin_of(url)], token, engines) for url in urls]
    print("\n".join(report(checks, config.user_agent, token, how)))
    return exit_code(checks)


def _audit(args: argparse.Namespace, secrets: list[str]) -> int:
    return _reporting("audit", _audit_run, args, secrets)


def _reporting(
    name: str,
    run: Callable[[argparse.Namespace, list[str]], int],
    args: argparse.Namespace,
    secrets: list[str],
) -> int:
    """`audit` and `diff`: every path ends here with its own code and its own words (an
    interrupted audit or diff has no sitemap to speak of)."""
    try:
        return run(args, secrets)
    except (KeyboardInterrupt, InterruptedCrawl):  # a crawl's message speaks of publishing
        _err(f"{name} interrupted: no report written")
        return Exit.INTERRUPTED
    except (SitemapCrawlerError, SitemapOutError) as exc:
        _err(redact(str(exc), secrets))
        return getattr(exc, "exit_code", Exit.FAILURE)
    except Exception as exc:  # the command's one place for the unexpected
        _unexpected(exc, secrets)
        return Exit.FAILURE


def _audit_run(args: argparse.Namespace, secrets: list[str]) -> int:
    from crawler.core.audit_html import render_html
    from crawler.core.audit_text import render_text
    from crawler.core.findings import at_or_above, ordered
    from crawler.shell.audit import audit, is_url

    given = vars(args)
    target: str = args.target
    no_fetch, crawl = given.pop("audit_no_fetch"), given.pop("audit_crawl")
    json_path, html_path = given.pop("audit_json"), given.pop("audit_html")
    fail_on = given.pop("audit_fail_on")
    engines = given.pop("audit_engines")
    if engines and not is_url(target):
        raise ConfigError("--engine-status needs TARGET to be a URL: the engines know URLs")
    if given.get("public_url") and not is_url(target):
        raise ConfigError(
            "--public-url needs TARGET to be the staging server's URL, not a local file"
        )

    configure = _configure_audit(given, secrets)
    _check_reports(json_path, html_path)
    progress, log = _progress(given)
    with _workers_for(given, AUDIT_OPTIONS, fetching=not no_fetch) as spares:
        result = _run(
            audit(
                target,
                configure,
                fetch_urls=not no_fetch,
                crawl=crawl,
                log=log,
                progress=progress,
                workers=spares,
            )
        )
    findings = ordered(result.findings)
    summary = result.summary
    said = None
    if engines:  # the submit keys, as the audit's options gave them
        said = _engine_status(_settings_of(given, AUDIT_OPTIONS), result.entries)
    if json_path is not None:
        data = {"summary": summary.to_json(), "findings": [f.to_json() for f in findings]}
        if said is not None:
            data["engines"] = said[0]
        _write_json(json_path, data, usage=True)
    if html_path is not None:
        _write_text(html_path, render_html(summary, findings))
    print(render_text(summary, findings), end="")
    if said is not None:
        print("\nwhat the search engines last said (--engine-status):")
        print("\n".join(f"  {text}" for text in said[1]) or "  (no sitemap URL was read)")
    if result.why_nothing is not None:
        _err(result.why_nothing)
        return Exit.NOTHING
    return Exit.NO if at_or_above(findings, fail_on) else Exit.OK


def _engine_status(config: Config, sitemaps: Sequence[str]) -> tuple[list[Any], list[str]]:
    """The audit's optional section: `submit --status` for the sitemaps it read first, as
    JSON and as lines. An engine that refuses is a line here, not a changed exit code: the
    audit's verdict is on the sitemaps, not on an account's access."""
    from crawler.core.submissions import line
    from crawler.shell import submit

    if not config.submit:
        raise ConfigError("--engine-status needs --submit google,bing (or submit in the config)")
    submit.check_ready(submit.Settings.of(config))
    statuses, refusals = _run(
        submit.run(submit.Settings.of(config), sitemaps, status=True, say=lambda _: None)
    )
    data = [s.to_json() for s in statuses] + [{"error": str(r)} for r in refusals]
    return data, [line(s) for s in statuses] + [str(r) for r in refusals]


def _configure_audit(
    given: dict[str, Any], secrets: list[str]
) -> Callable[[str, str | None], Config]:
    """The audit's Config for a folder and its sitemap's URL, from the command line's
    options (AUDIT_OPTIONS): `audit` and `diff` read sitemaps and check URLs with it."""
    warned: list[bool] = []

    def configure(url: str, sitemap_url: str | None) -> Config:
        values = argparse.Namespace(**{**given, "url": url})
        if sitemap_url is not None:
            values.sitemap_url = sitemap_url
        config = load_config(values, only=AUDIT_OPTIONS)
        secrets.extend(config.secrets)
        if not warned:
            warned.append(True)
            _warn_insecure(config)
        return config

    return configure


def _check_reports(json_path: Path | None, html_path: Path | None) -> None:
    from crawler.shell.outputs import check_files

    reports = (("--report", json_path), ("--html", html_path))
    check_files([(option, path) for option, path in reports if path is not None])


def _progress(given: dict[str, Any]) -> tuple[ProgressLine | None, Callable[[str], None]]:
    """The progress line of `audit` and `diff` (none with --quiet), and where lines go."""
    if given.get("quiet"):
        return None, lambda _: None
    progress = ProgressLine(sys.stderr, tty=sys.stderr.isatty(), words=AUDIT_WORDS)
    return progress, progress.log


def _workers_for(
    given: dict[str, Any], only: frozenset[str], *, fetching: bool
) -> contextlib.AbstractContextManager[list[Any]]:
    """The worker processes, forked now, before the event loop, as for a crawl (none when
    nothing is fetched); the settings that decide how many are checked here already (a
    placeholder start URL)."""
    from crawler.shell.pool import worker_processes

    return worker_processes(_worker_count(_settings_of(given, only)) if fetching else 0)


def _settings_of(given: dict[str, Any], only: frozenset[str]) -> Config:
    """The settings the command line gives, checked, for what needs no start URL (workers,
    the engines' keys): a placeholder stands in for it."""
    placeholder = argparse.Namespace(**given, url="http://localhost/")
    return load_config(placeholder, only=only, say=False)


# -- diff -------------------------------------------------------------------------------------

DIFF_EXAMPLES = """\
examples:
  sitemap-crawler diff published/ out/ --fail-on 'removed>2%,added>5000'
  sitemap-crawler diff https://www.example.com/sitemap.xml out/sitemap.xml --fetch
  sitemap-crawler diff yesterday.jsonl today.jsonl --report diff.json --html diff.html

""" + help_text("diff")


def _add_diff_parser(commands: Any, whole: bool = True) -> None:
    diff = commands.add_parser(
        "diff",
        help="compare two sitemaps: URLs added, removed, lastmod moved (release gates)",
        usage="%(prog)s [options] OLD NEW",
        epilog=DIFF_EXAMPLES,
        formatter_class=_HelpFormatter,
        argument_default=argparse.SUPPRESS,
        description="Compare the URLs of OLD and NEW, each a sitemap file (xml, xml.gz, txt, "
        "an index and its parts, a feed), a sitemap or site URL (fetched politely, as "
        "`audit` does), a folder holding a published set, or a crawl's --decisions file. "
        "URLs are compared as the protocol reads them (host case and escaping aside), "
        "parameters as written. Prints the counts, then the URLs removed, added and with "
        "another lastmod, sorted; --report and --html list them all.",
    )
    if not whole:  # not the command asked: its line in the top level's help only
        return
    diff.add_argument("old", metavar="OLD", help="the set before: file, URL, folder or decisions")
    diff.add_argument("new", metavar="NEW", help="the set after, as OLD")
    _config_file_option(diff)
    only = diff.add_argument_group("diff")
    only.add_argument(
        "--report", "--json", dest="diff_json", type=Path, metavar="FILE", default=None,
        help="write the figures and every URL of each list as JSON",
    )  # fmt: skip
    only.add_argument(
        "--html", dest="diff_html", type=Path, metavar="FILE", default=None,
        help="write the diff as one self-contained HTML page",
    )  # fmt: skip
    only.add_argument(
        "--fail-on", dest="diff_fail_on", action="append", default=[], metavar="RULE",
        help="exit 1 when crossed: KIND>N (a count) or KIND>P%% (of OLD's URLs), KIND "
        "removed, added or moved; repeat it or separate with commas",
    )  # fmt: skip
    only.add_argument(
        "--fetch", dest="diff_fetch", action="store_true", default=False,
        help="fetch the URLs removed and added, as the audit checks a listed URL: tells a "
        "URL removed because it now 404s, redirects or says noindex from one still 200 "
        "and indexable",
    )  # fmt: skip
    only.add_argument(
        "--fetch-max", dest="diff_fetch_max", type=int, default=10_000, metavar="N",
        help="fetch at most N URLs of each list (default 10000; the rest: not checked)",
    )  # fmt: skip
    only.add_argument(
        "--lines", dest="diff_lines", type=int, default=20, metavar="N",
        help="URLs shown per list on the terminal (default 20; the reports have all)",
    )  # fmt: skip
    _add_config_options(
        diff,
        only=DIFF_OPTIONS,
        helps={
            "max_bot_blocked": "--fetch: stop fetching when a CDN's bot protection answers "
            "more than this fraction of the requests, once 20 were made; 1: never (default: "
            "0.2)",
        },
    )


#: What `diff` fetches with: the audit's options but --public-url (each set names its own URLs)
#: and --engine-status's (diff asks no engine anything).
DIFF_OPTIONS = AUDIT_OPTIONS - {"public_url"} - ENGINE_STATUS_OPTIONS


def _diff(args: argparse.Namespace, secrets: list[str]) -> int:
    return _reporting("diff", _diff_run, args, secrets)


def _diff_run(args: argparse.Namespace, secrets: list[str]) -> int:
    from crawler.core.diff import KINDS, crossed, parse_thresholds
    from crawler.core.diff_html import render_html
    from crawler.core.diff_report import render_json, render_text
    from crawler.shell.diff import diff, write_streamed

    given = vars(args)
    old, new = given.pop("old"), given.pop("new")
    json_path, html_path = given.pop("diff_json"), given.pop("diff_html")
    thresholds = parse_thresholds(given.pop("diff_fail_on"))
    fetch, fetch_max = given.pop("diff_fetch"), given.pop("diff_fetch_max")
    lines = given.pop("diff_lines")
    if fetch_max < 1 or lines < 0:
        raise ConfigError("--fetch-max must be at least 1, and --lines at least 0")
    _check_reports(json_path, html_path)
    configure = _configure_audit(given, secrets)
    progress, log = _progress(given)
    with _workers_for(given, DIFF_OPTIONS, fetching=fetch) as spares:
        result = _run(
            diff(old, new, configure, fetch=fetch, fetch_max=fetch_max, log=log,
                 progress=progress, workers=spares)
        )  # fmt: skip
    summary, spool = result.summary, result.spool
    try:
        over = crossed(thresholds, summary)

        def lists() -> dict[str, Iterator[Any]]:  # read lazily, one list at a time
            return {kind: spool.changes(kind, fetched=summary.fetched) for kind in KINDS}

        for path, chunks in (
            (json_path, lambda: render_json(summary, thresholds, lists())),
            (html_path, lambda: render_html(summary, thresholds, over, lists())),
        ):
            if path is not None:
                try:
                    write_streamed(path, chunks())
                except OSError as exc:
                    raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None
        heads: dict[str, list[Any]] = {
            kind: list(spool.changes(kind, fetched=summary.fetched, limit=lines)) for kind in KINDS
        }
        print(render_text(summary, heads, thresholds, over, lines=lines), end="")
    finally:
        spool.close()
    if not summary.old_urls and not summary.new_urls:
        _err("nothing to compare: neither OLD nor NEW lists a URL")
        return Exit.NOTHING
    return Exit.NO if over else Exit.OK


def _write_text(path: Path, text: str) -> None:
    """An audit's output file, whole or not at all (see _replace). Its folder is made: an
    audit's paths are not checked before its requests yet, and the results are not to be
    lost for a missing folder (a crawl's are checked: a missing folder is refused)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _replace(path, text)
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None


def _replace(path: Path, text: str) -> None:
    """Write path whole or not at all: a temporary file renamed over it. Written in place
    when it is not a regular file (/dev/null, a FIFO, a symlink): a rename would replace
    the device or the link."""
    from crawler.shell.outputs import written_in_place

    if written_in_place(path):
        with path.open("w", encoding="utf-8") as fh:
            fh.write(text)
        return
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """On uvloop where installed (crawler.shell.eventloop says why): since the crawl has its
    own HTTP/1.1 client, the loop is a measured share of a page's CPU (#26)."""
    from crawler.shell import eventloop

    return eventloop.run(coro)


def _write_json(path: Path, data: dict[str, Any], *, usage: bool = False) -> None:
    """`usage`: a path that cannot be written is the user's to fix (exit 2), not a disk
    failing mid-crawl (the audit's --json)."""
    if usage:
        _write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        return
    try:
        _replace(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    except OSError as exc:
        raise OutputError(f"cannot write report {path}: {exc.strerror or exc}") from None


class _Log:
    """Where the CLI's own lines go: plain text, or with --log-format json (a crawl's, once
    the command line or the config asks for it) only JSON events on stderr, in one place."""

    json = False
    #: the report's figures of the crawl under way, for the summary event and the metrics
    figures: Callable[[], dict[str, Any]] | None = None
    metrics: Path | None = None  # --metrics, once the config is read
    began = 0.0  # time.monotonic() at the start of the run
    said: frozenset[str] = frozenset()  # warnings said once a run
    command = ""  # the command run: crawl and job tell the operator how they ended
    reason: str | None = None  # the run's one-line error, once said
    notify: Any = None  # crawler.shell.notify.Settings, once the config is read
    args: argparse.Namespace | None = None  # the command line, for notify_alone()

    def __init__(self) -> None:
        self.labels: dict[str, str] = {}  # on every metric: the site, and a fleet job's index


_LOG = _Log()


def _start(config: Config, secrets: Sequence[str]) -> None:
    from crawler.core.events import start_line
    from crawler.shell.notify import Settings

    _LOG.json = config.log_format == "json"
    _LOG.metrics = config.metrics
    _LOG.notify = Settings(
        config.on_failure,
        config.notify_url,
        config.notify_on_success,
        config.notify_format,
        tuple(secrets),
    )
    _LOG.labels = {"site": redact(config.url or "", secrets), **_LOG.labels}
    if _LOG.json:
        _event(start_line(config, __version__, secrets))


def _finish(code: int) -> int:
    """The end of every run: the metrics file, then (JSON mode) the summary event, the last
    line, with the figures (when a crawl began) and the exit code, which is returned (5
    instead of 0 when the metrics could not be written)."""
    from crawler.core.events import summary_line

    figures = _LOG.figures() if _LOG.figures else {}
    if _LOG.metrics is not None and code != Exit.BUSY:  # busy: the other run's file
        try:
            _write_metrics(_LOG.metrics, figures, code)
        except OSError as exc:
            if code != Exit.USAGE:  # usage: the line said what is wrong, maybe this path
                done = "the sitemap was published, but " if figures.get("published") else ""
                failed = Exit.IO if code == Exit.OK else code
                reason = exc.strerror or exc
                _err(f"{done}cannot write metrics {_LOG.metrics}: {reason}", failed)
                code = failed
    if _LOG.command in ("crawl", "job"):
        _notify(code, figures)
    if _LOG.json:
        _event(summary_line(figures, code))
    return code


def _notify(code: int, figures: dict[str, Any]) -> None:
    """--on-failure and notify_url, once, with the final exit code (#28). Neither changes
    it: a notification that fails is a warning line. Without a config (it could not be
    read: exit 2), the notification settings are read on their own, leniently."""
    from crawler.exit_codes import MEANINGS
    from crawler.shell import interrupts, notify

    settings = _LOG.notify or notify_alone(_LOG.args)
    if not settings.wanted:
        return
    from crawler.core.notice import Ending  # a run told only: not every crawl's import

    ending = Ending(
        command=_LOG.command,
        exit_code=code,
        meaning=MEANINGS[_LOG.command].get(Exit(code), "") if code in set(Exit) else "",
        reason=None if code == Exit.OK else _LOG.reason,
        site=_LOG.labels.get("site") or None,
        figures=figures,
        host=notify.hostname(),
        labels={k: v for k, v in _LOG.labels.items() if k != "site"},
    )
    try:
        with interrupts.sigterm_interrupts():
            notify.tell(settings, ending, _err, capture=_LOG.json)
    except KeyboardInterrupt:  # SIGTERM or SIGINT again: the run ends as it was ending
        _err("warning: interrupted while telling the operator; the exit code is unchanged")


def notify_alone(args: argparse.Namespace | None) -> Any:
    """The notification settings when the config as a whole could not be read: the file
    the command would have read (the job's default one too), and the secrets given."""
    from crawler.shell.notify import read_alone

    given = vars(args) if args is not None else {}
    path = given.get("config")
    if path is None and given.get("command") == "job":
        named = os.environ.get("SITEMAP_CRAWLER_CONFIG")
        path = Path(named) if named else (JOB_CONFIG if JOB_CONFIG.is_file() else None)
    secrets = _given_secrets(args) if args is not None else []
    return read_alone(path, given, os.environ, secrets)


def _write_metrics(path: Path, figures: dict[str, Any], code: int) -> None:
    """Atomically, as the report; the last publish time carried over from the file's
    previous version when this run did not publish."""
    from crawler.core.metrics import last_publish_of, render

    now = time.time()
    if figures.get("published"):
        last: float | None = now
    else:
        try:
            last = last_publish_of(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            last = None
    seconds = time.monotonic() - _LOG.began
    text = render(
        figures, exit_code=code, seconds=seconds, ended=now, last_publish=last, labels=_LOG.labels
    )
    _replace(path, text)


def _event(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _err(message: str, exit_code: int | None = None) -> None:
    """A line for the user on stderr: an error when it comes with its exit code, else a
    warning or a note; an event of its own with JSON logs."""
    if exit_code is not None:
        _LOG.reason = message  # the run's one-line reason, for notify_url and --on-failure
    if _LOG.json:
        from crawler.core.events import error_line, log_line

        _event(log_line(message) if exit_code is None else error_line(message, exit_code))
        return
    print(f"sitemap-crawler: {message}", file=sys.stderr)


def console_main() -> NoReturn:
    """The `sitemap-crawler` command (pyproject's script, and `python -m crawler.cli`): main,
    then the exit, without freeing the run's objects one by one. At exit the interpreter's
    last collection freed every object the run left in reference cycles (the crawl's whole
    memory, which the CLI's figures kept until then): 0.2 CPU-s of a 6 s unchanged night of
    20,000 pages, more on larger sites, for memory the operating system takes back anyway
    (#26). Frozen, they are left to it. The exit itself is unchanged: atexit handlers run,
    stdout and stderr are flushed, and everything the run opened it has closed already
    (the published files, the state, the report, the spools). Python's development mode
    (`-X dev`) keeps the collection, and with it the warning of a file left open, which
    tests/test_pool.py looks for. Not main's own: tests call main in process, and their
    objects must be collected. Before main, the C heap's thresholds and the cycle
    collector's are set for the run (crawler.shell.heap): process-wide settings, so the
    command's, not main's either."""
    keep_heap()
    fewer_collections()
    try:
        code = main()
    finally:  # also when argparse leaves by SystemExit (--help, --version)
        if not sys.flags.dev_mode:
            gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    console_main()
