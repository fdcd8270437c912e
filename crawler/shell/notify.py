"""Telling the operator how a run ended (#28): `--on-failure COMMAND` and `notify_url`.

Called once, by the CLI, where a crawl's or a job's exit code is final. Neither can change
that code: the sitemap's fate is decided, and a notification that could not be sent is a
warning line in the log (which the log collector, or the CronJob's own failure, still
shows), not a second failure hiding the first.

The webhook gets one JSON POST (crawler.core.notice says what is in it, scrubbed of every
secret), retried on a connection error, 429 or 5xx with a bounded backoff (Retry-After
honoured up to `MAX_RETRY_AFTER`), each try cut off after `TIMEOUT` seconds. The command
runs as --on-publish's does (crawler.shell.on_publish: `sh -c`, no credentials in its
environment, killed at its timeout), told the exit code, the reason and a summary file.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from crawler.config import NOTIFY_FORMATS, coerce, env_var, from_env, robots_from_is_url
from crawler.errors import SitemapCrawlerError
from crawler.shell import eventloop
from crawler.shell.retry import RetryPolicy, call

if TYPE_CHECKING:  # the telling's own modules are loaded when a run is told: few are
    from crawler.core.notice import Ending

#: Seconds one POST may take, and the retries after a first one that failed for a reason
#: that may pass (a connection error, 429, 5xx): a chat service's blip is ridden out, a
#: dead endpoint costs the job about a minute at worst, never hours.
TIMEOUT: Final = 10.0
RETRIES: Final = 3
MAX_RETRY_AFTER: Final = 10.0
#: Seconds the --on-failure command may take: an alert (curl, mail) fits many times over,
#: and a failed run that is already late is not held up for long.
COMMAND_TIMEOUT: Final = 120.0


#: The keys that say how to tell the operator, read on their own by read_alone().
KEYS: Final = ("on_failure", "notify_url", "notify_on_success", "notify_format")


@dataclass(slots=True, frozen=True)
class Settings:
    """The notification settings of a run (from its Config, or read on their own when the
    Config could not be built: a bad config is a failure worth telling too)."""

    on_failure: str | None = None
    url: str | None = None
    on_success: bool = False
    format: str = "json"
    secrets: tuple[str, ...] = ()

    @property
    def wanted(self) -> bool:
        return bool(self.on_failure or self.url)


def read_alone(
    path: Path | None,
    given: Mapping[str, Any],
    environ: Mapping[str, str],
    secrets: Sequence[str],
) -> Settings:
    """The notification settings when the config as a whole could not be read (a typo in
    a key, a bad value): each of KEYS from the file at `path` (read as TOML, its other keys
    ignored), the environment and the command line (`given`), a bad one skipped (a
    notify_url that is no http(s) URL too: the config's check refused it). A nightly
    job whose config broke is the failure an operator most needs to hear of."""
    import tomllib  # a broken config's only: not a start-up import of every crawl

    values: dict[str, Any] = {}
    if path is not None:
        try:
            raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            raw = {}
        values.update({k: raw[k] for k in KEYS if k in raw})
    for key in KEYS:
        with contextlib.suppress(SitemapCrawlerError):
            values.update(from_env({env_var(key): environ.get(env_var(key), "")}))
        if key in given:
            values[key] = given[key]
    settings: dict[str, Any] = {}
    for key, value in values.items():
        with contextlib.suppress(SitemapCrawlerError):
            settings[key] = coerce(key, value)
    url = settings.get("notify_url")
    if url is not None and not robots_from_is_url(url.strip()):
        url = None  # refused by the config's check (exit 2): never posted to, never shown
    fmt = settings.get("notify_format")
    return Settings(
        settings.get("on_failure"),
        url,
        bool(settings.get("notify_on_success")),
        fmt if fmt in NOTIFY_FORMATS else "json",
        (*secrets, *([url] if url else [])),
    )


def where(url: str) -> str:
    """The webhook as a log line may name it: its scheme and host. Its path is often the
    secret itself (Slack's /services/T.../B.../token)."""
    try:
        parts = urlsplit(url.strip())
        return f"{parts.scheme}://{parts.hostname or '?'}" + (
            f":{parts.port}" if parts.port else ""
        )
    except ValueError:
        return "the notify_url"


def tell(settings: Settings, ending: Ending, say: Callable[[str], None], capture: bool) -> None:
    """Send what `settings` ask for about `ending`; each failure is a warning through `say`.
    `capture`: the command's output is handed to `say` a line at a time (JSON logs)."""
    from crawler.core.notice import body, encode

    if settings.url and (not ending.ok or settings.on_success):
        data = encode(body(ending, settings.format, settings.secrets))
        failed = eventloop.run(post(settings.url.strip(), data))
        if failed is not None:
            say(
                f"warning: the notification to {where(settings.url)} failed: {failed} "
                "(the exit code is unchanged)"
            )
    if settings.on_failure and not ending.ok:
        _run_command(settings, ending, say, capture)


async def post(
    url: str, data: bytes, *, retries: int = RETRIES, timeout: float = TIMEOUT
) -> str | None:
    """POST `data` (JSON) to `url`, retried; None when it was taken (2xx), else why not."""
    import aiohttp  # here: every run reads these settings, few post (a crawl never loads it)

    policy = RetryPolicy(retries=retries, max_retry_after=MAX_RETRY_AFTER, base=1.0)
    headers = {"Content-Type": "application/json", "User-Agent": "sitemap-crawler"}
    client_timeout = aiohttp.ClientTimeout(total=timeout)
    async with aiohttp.ClientSession(timeout=client_timeout, trust_env=True) as session:
        reply = await call(session, "POST", url, policy, data=data, headers=headers)
    tries = f" after {reply.tries} tries" if reply.tries > 1 else ""
    if reply.status is None:
        return f"no answer ({reply.error or 'timeout'}){tries}"
    if not 200 <= reply.status < 300:
        return f"HTTP {reply.status}{tries}"
    return None


def environment(ending: Ending, summary: Path) -> dict[str, str]:
    """What the --on-failure command is told. None of these names is a config key, as
    for --on-publish's: a command that runs sitemap-crawler does not take them as settings."""
    return {
        "SITEMAP_CRAWLER_FAILED_EXIT_CODE": str(ending.exit_code),
        "SITEMAP_CRAWLER_FAILED_REASON": ending.reason or "",
        "SITEMAP_CRAWLER_FAILED_SUMMARY": str(summary),
    }


def _run_command(
    settings: Settings, ending: Ending, say: Callable[[str], None], capture: bool
) -> None:
    from crawler.core.notice import body, scrub
    from crawler.shell import on_publish

    assert settings.on_failure is not None
    data: dict[str, Any] = body(ending, "json", settings.secrets)
    with tempfile.TemporaryDirectory(prefix="sitemap-crawler-failed-") as folder:
        summary = Path(folder) / "summary.json"
        summary.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", "utf-8")
        env = {k: scrub(v, settings.secrets) for k, v in environment(ending, summary).items()}
        outcome = on_publish.run(settings.on_failure, env, capture=capture, timeout=COMMAND_TIMEOUT)
    for line in outcome.output:
        say(f"on-failure: {line}")
    if not outcome.ok:
        say(
            f"warning: the on-failure command failed: {outcome.why(COMMAND_TIMEOUT)} "
            "(the exit code is unchanged)"
        )


def hostname() -> str:
    """The machine's name (a pod's), for a notification among many runs'."""
    with contextlib.suppress(OSError):
        return os.uname().nodename
    return ""
