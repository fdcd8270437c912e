"""--log-format json: every event of a crawl as one JSON object on one line, for log collectors.

Pure: an event's fields in, its line out. The CLI decides when each is written (to stderr,
and nothing else there in that mode); the progress event is crawler.shell.progress's.

Events: ``start`` (the effective settings, secrets redacted), ``progress``, ``log`` (level
``info`` or ``warning``: the crawl's lines that start with "warning:"), ``error`` (message
and exit code), ``summary`` (the report's figures and the exit code; always the last line).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from crawler.core.access import redact

WARNING_PREFIX = "warning: "


def line(event: str, **fields: Any) -> str:
    """One event as one line of JSON (no newline): ``event`` first, then the fields."""
    return json.dumps({"event": event, **fields}, ensure_ascii=False, default=str)


def log_line(message: str) -> str:
    """A log message of the crawl: a warning when it says so, else info."""
    if message.startswith(WARNING_PREFIX):
        return line("log", level="warning", message=message[len(WARNING_PREFIX) :])
    return line("log", level="info", message=message)


def error_line(message: str, exit_code: int) -> str:
    return line("error", message=message, exit_code=exit_code)


def start_line(config: Any, version: str, secrets: Iterable[str]) -> str:
    """The effective settings (a Config dataclass) with every secret replaced by ***."""
    hidden = list(secrets)
    settings = {f.name: _plain(getattr(config, f.name), hidden) for f in dataclasses.fields(config)}
    return line("start", version=version, settings=settings)


def summary_line(figures: dict[str, Any], exit_code: int) -> str:
    """The report's figures, the list of broken links cut to its length (the report holds
    them), and the exit code."""
    fields = dict(figures)
    if isinstance(fields.get("broken_links"), list):
        fields["broken_links"] = len(fields["broken_links"])
    return line("summary", **fields, exit_code=exit_code)


def _plain(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, Path):
        return redact(str(value), secrets)
    if isinstance(value, tuple | list):
        return [_plain(v, secrets) for v in value]
    return value
