"""Live progress of a long crawl: one refreshed status line on a terminal, a plain (or JSON)
line every 10 seconds in a log.

Written by hand rather than with rich or tqdm: a single status line is a few lines of code,
and a crawl's dependencies should be the ones it cannot do without.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import TextIO

#: Seconds between updates: a person watches a terminal; a log wants few lines.
TTY_INTERVAL = 0.5
LOG_INTERVAL = 10.0


@dataclass(slots=True, frozen=True)
class Snapshot:
    fetched: int
    listed: int
    queued: int
    errors: int
    elapsed: float
    fetched_before: int = 0  # by the runs a resumed crawl goes on from: not in pages/s

    @property
    def pages_per_second(self) -> float:
        return (self.fetched - self.fetched_before) / self.elapsed if self.elapsed > 0 else 0.0


def format_text(s: Snapshot) -> str:
    minutes, seconds = divmod(int(s.elapsed), 60)
    return (
        f"{s.fetched} fetched, {s.listed} listed, {s.queued} queued, {s.errors} errors, "
        f"{s.pages_per_second:.0f} pages/s, {minutes}:{seconds:02d} elapsed"
    )


def format_json(s: Snapshot) -> str:
    data = asdict(s)
    if not s.fetched_before:
        del data["fetched_before"]  # a fresh crawl's line keeps its shape
    data["elapsed"] = round(s.elapsed, 1)
    data["pages_per_second"] = round(s.pages_per_second, 1)
    return json.dumps({"event": "progress", **data})


class Renderer:
    """Writes snapshots to a stream: in place on a terminal, as lines elsewhere."""

    def __init__(
        self,
        stream: TextIO,
        *,
        tty: bool,
        json_lines: bool = False,
        interval: float | None = None,
    ) -> None:
        self.stream = stream
        self.tty = tty and not json_lines
        self.json_lines = json_lines
        self.interval = interval or (TTY_INTERVAL if self.tty else LOG_INTERVAL)
        self._width = 0

    def __call__(self, snapshot: Snapshot) -> None:
        if self.json_lines:
            self.stream.write(format_json(snapshot) + "\n")
        elif self.tty:
            text = format_text(snapshot)
            self.stream.write("\r" + text.ljust(self._width))
            self._width = len(text)
        else:
            self.stream.write("progress: " + format_text(snapshot) + "\n")
        self.stream.flush()

    def finish(self) -> None:
        """End the refreshed line, so what is printed next starts on its own line."""
        if self.tty and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0
