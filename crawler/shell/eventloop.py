"""The event loop of every run (crawl, job, audit, diff, the workers, the steps after a
publish): uvloop's where it is installed, asyncio's own where it is not (Windows, PyPy,
where pyproject.toml's marker leaves it out).

Measured on the crawl with its own HTTP/1.1 client (#26): the 20,000-page 304 night 3.4%
fewer instructions under callgrind, the 3,000-page one 2.2%, a full crawl even; published
files identical (docs/design.md has the figures). One owner, so that the main process and
its workers (forked or spawned) run the same loop, and a run never mixes two.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


@functools.cache
def loop_factory() -> Callable[[], asyncio.AbstractEventLoop]:
    """The loop factory, looked up once; imported only when a loop is made, so a command
    that runs none (--help, a config check) does not pay for uvloop's import."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop
    return uvloop.new_event_loop


def runner() -> asyncio.Runner:
    """asyncio's Runner on our loop: Ctrl-C cancels the main task, as with asyncio.run."""
    return asyncio.Runner(loop_factory=loop_factory())


def run(coro: Coroutine[Any, Any, T]) -> T:
    """asyncio.run(coro) on our loop."""
    with runner() as loop_runner:
        return loop_runner.run(coro)
