"""Live progress of a long crawl: one refreshed status line on a terminal, a plain (or JSON)
line every 10 seconds in a log.

Written by hand rather than with rich or tqdm: a single status line is a few lines of code,
and a crawl's dependencies should be the ones it cannot do without.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict, dataclass
from typing import TextIO

from crawler.core.events import log_line

#: Seconds between updates: a person watches a terminal; a log wants few lines.
TTY_INTERVAL = 0.5
LOG_INTERVAL = 10.0


@dataclass(slots=True)  # plain, not frozen: nothing hashes or changes it (#26)
class ProgressFigures:
    """What one progress line shows: taken at once, so the figures agree."""

    fetched: int
    listed: int
    queued: int
    failed: int  # requests failed with a 5xx or no answer, after retries
    elapsed: float
    pace: str = ""  # what spaces the requests, when something does ("Crawl-delay 1 s ...")
    interval: float = 0.0  # seconds between request starts, when spaced
    fetched_before: int = 0  # by the runs a resumed crawl goes on from: not in pages/s

    @property
    def pages_per_second(self) -> float:
        return (self.fetched - self.fetched_before) / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def seconds_left(self) -> float | None:
        """At least this long for the URLs queued now (more links may be found): known when
        requests are spaced, else estimated from the rate so far."""
        if not self.queued:
            return None
        if self.interval > 0:
            return self.queued * self.interval
        rate = self.pages_per_second
        return self.queued / rate if rate > 0 and self.fetched >= 20 else None


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


#: The words for the fetched and listed counts: a crawl's; an audit checks the URLs its
#: sitemaps list, and finds them indexable (or not).
CRAWL_WORDS = ("fetched", "listed")
AUDIT_WORDS = ("checked", "indexable")


def parts(s: ProgressFigures, words: tuple[str, str] = CRAWL_WORDS) -> list[str]:
    """The line's parts, most important first: a narrow terminal shows a prefix of them."""
    items = [
        f"{s.fetched} {words[0]}",
        f"{s.listed} {words[1]}",
        f"{s.queued} queued",
        f"{s.pages_per_second:.0f} pages/s" if s.pages_per_second >= 1 or not s.fetched
        else f"{s.pages_per_second:.2f} pages/s",
        f"{_clock(s.elapsed)} elapsed",
    ]  # fmt: skip
    if (left := s.seconds_left) is not None:
        items.append(f">= {_clock(left)} left for the queue")
    if s.failed:
        items.insert(3, f"{s.failed} failed")
    if s.pace:
        items.append(s.pace)
    return items


def format_text(
    s: ProgressFigures, width: int | None = None, words: tuple[str, str] = CRAWL_WORDS
) -> str:
    """The status line; with `width`, only as many parts as fit (then cut, as a last resort)."""
    items = parts(s, words)
    text = ", ".join(items)
    if width is None or len(text) <= width:
        return text
    while len(items) > 1 and len(", ".join(items)) > width:
        items.pop()
    return ", ".join(items)[: max(width, 1)]


def format_json(s: ProgressFigures) -> str:
    data = asdict(s)
    if not s.fetched_before:
        del data["fetched_before"]  # a fresh crawl's line keeps its shape
    data["elapsed"] = round(s.elapsed, 1)
    data["pages_per_second"] = round(s.pages_per_second, 1)
    left = s.seconds_left
    data["seconds_left"] = None if left is None else round(left, 1)
    return json.dumps({"event": "progress", **data})


class ProgressLine:
    """Writes snapshots to a stream: in place on a terminal, as lines elsewhere."""

    def __init__(
        self,
        stream: TextIO,
        *,
        tty: bool,
        json_lines: bool = False,
        interval: float | None = None,
        words: tuple[str, str] = CRAWL_WORDS,
    ) -> None:
        self.stream = stream
        self.words = words
        self.tty = tty and not json_lines
        self.json_lines = json_lines
        self.interval = interval or (TTY_INTERVAL if self.tty else LOG_INTERVAL)
        self._width = 0

    def __call__(self, snapshot: ProgressFigures) -> None:
        if self.json_lines:
            self.stream.write(format_json(snapshot) + "\n")
        elif self.tty:
            # one column short of the width: writing the last column wraps some terminals
            width = shutil.get_terminal_size((80, 24)).columns - 1
            text = format_text(snapshot, width, self.words)
            self.stream.write("\r" + text.ljust(self._width))
            self._width = len(text)
        else:
            self.stream.write("progress: " + format_text(snapshot, words=self.words) + "\n")
        self.stream.flush()

    def log(self, message: str) -> None:
        """A log line, on a line of its own: on a terminal the status line is cleared first
        and drawn again at the next update."""
        self.finish()
        self.stream.write((log_line(message) if self.json_lines else message) + "\n")
        self.stream.flush()

    def finish(self) -> None:
        """End the refreshed line, so what is printed next starts on its own line."""
        if self.tty and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0
