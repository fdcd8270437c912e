"""SIGTERM as SIGINT for the steps after a publish (upload, submit, notify): a container is
stopped with SIGTERM, and a step it kills outright writes no report and tells no one."""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from crawler.shell import eventloop

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` on a loop of its own (crawler.shell.eventloop's); SIGTERM cancels it as
    SIGINT does (asyncio's Runner), and either is a KeyboardInterrupt here once the request
    in flight returns or is cancelled. The SIGTERM handler in place before is in place after."""

    async def main() -> T:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, task.cancel)
        try:
            return await coro
        except asyncio.CancelledError:
            raise KeyboardInterrupt from None

    if threading.current_thread() is not threading.main_thread():
        return eventloop.run(coro)
    previous = signal.getsignal(signal.SIGTERM)
    try:
        with eventloop.runner() as runner:
            return runner.run(main())
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Within: SIGTERM raises KeyboardInterrupt, as SIGINT does (blocking code, a child)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
