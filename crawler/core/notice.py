"""What the operator is told when a run ends (#28): the webhook's body and the words of a
failure, from the run's outcome. Pure: the sending is crawler.shell.notify's.

A notification leaves the machine, often for a chat room many people read, so nothing in it
may be a secret: every string is scrubbed of the run's secrets (auth, header, cookie and
proxy values, the webhook's own URL, API keys) and of any URL's user:password@, whatever
field it sits in. The summary is the report's figures cut to a few numbers: a webhook body
stays small, and the report itself (named in it) holds the rest.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from crawler.core.access import redact

#: The report's figures a notification carries; lists among them become their length.
SUMMARY_KEYS: Final = (
    "start_url",
    "published",
    "sitemap_url",
    "urls_listed",
    "pages_fetched",
    "pages_fetched_this_run",
    "requests_failed",
    "pages_not_modified",
    "seconds",
    "changes",
    "feed_url",
    "broken_links",
    "on_publish_exit_code",
    "submitted",
)

#: scheme://user:password@ in any text: the userinfo goes, the URL stays readable.
_USERINFO: Final = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#@\s\"'<>]*@")


@dataclass(slots=True, frozen=True)
class Ending:
    """How a run ended, as a notification tells it."""

    command: str  # crawl or job
    exit_code: int
    meaning: str  # the exit code's line in the table (crawler/exit_codes.py)
    reason: str | None  # the run's one-line error; None when it succeeded
    site: str | None  # the start URL, when the settings were read that far
    figures: dict[str, Any] = field(default_factory=dict)  # the report's figures
    host: str = ""  # the machine (a pod's name): which of many runs this was
    labels: dict[str, str] = field(default_factory=dict)  # a fleet job's index

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


def scrub(value: Any, secrets: Iterable[str]) -> Any:
    """`value` (a JSON value) with every secret masked and every URL's userinfo dropped."""
    hidden = tuple(secrets)
    if isinstance(value, str):
        return _USERINFO.sub(r"\1", redact(value, hidden))
    if isinstance(value, dict):
        return {scrub(k, hidden): scrub(v, hidden) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub(v, hidden) for v in value]
    return value


def summary(figures: dict[str, Any]) -> dict[str, Any]:
    """The few figures a notification carries, lists as their length."""
    picked = {key: figures[key] for key in SUMMARY_KEYS if key in figures}
    return {k: len(v) if isinstance(v, list) else v for k, v in picked.items()}


def headline(ending: Ending) -> str:
    """One line saying what happened, for a chat message or a mail subject."""
    site = ending.site or "(no start URL)"
    if ending.ok:
        listed = ending.figures.get("urls_listed")
        what = f"published {listed} URLs" if listed is not None else "succeeded"
        return f"sitemap-crawler {ending.command} {site}: {what}"
    return (
        f"sitemap-crawler {ending.command} {site} failed with exit {ending.exit_code} "
        f"({ending.meaning}): {ending.reason or 'no reason given'}"
    )


def body(ending: Ending, fmt: str, secrets: Iterable[str]) -> dict[str, Any]:
    """The webhook's JSON body, scrubbed: ours ("json"), or a Slack incoming webhook's
    ("slack": a text message, which Slack's and most chat tools' webhooks take)."""
    if fmt == "slack":
        return scrub({"text": headline(ending)}, secrets)
    data = {
        "event": "sitemap-crawler." + ("succeeded" if ending.ok else "failed"),
        "command": ending.command,
        "site": ending.site,
        "ok": ending.ok,
        "exit_code": ending.exit_code,
        "meaning": ending.meaning,
        "reason": ending.reason,
        "host": ending.host,
        **({"labels": ending.labels} if ending.labels else {}),
        "summary": summary(ending.figures),
    }
    return scrub(data, secrets)


def encode(data: dict[str, Any]) -> bytes:
    return json.dumps(data, ensure_ascii=False, sort_keys=False, default=str).encode("utf-8")
