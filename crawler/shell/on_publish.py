"""--on-publish COMMAND: a shell command run after a successful publish (an upload with
rsync or a cloud CLI), with what was published in its environment.

Run through `sh -c` in its own process group, stdin closed, for at most `TIMEOUT` seconds
(then the whole group is killed). Its stdout and stderr pass through, or are handed back
as lines when the caller needs stderr for itself (JSON logs). It never sees the crawl's
secrets: the credentials' variables are taken out of the environment it inherits. Its
outcome never touches the published files: the CLI turns a failure into one line and exit 6.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from crawler.config import SECRET_KEYS, env_var

#: Seconds the command may take: an upload of a large sitemap over a slow link fits, a
#: command waiting for a password that never comes does not hold the nightly job forever.
TIMEOUT: Final = 900.0

#: The exit code recorded for a command that ran out of time (a shell's are 0 to 255).
TIMED_OUT: Final = -1


@dataclass(slots=True, frozen=True)
class Outcome:
    """How the command ended: the caller logs its output lines and judges its exit code."""

    exit_code: int  # TIMED_OUT when killed at the timeout; 127: not found (sh's)
    output: list[str]  # its stdout and stderr lines, when captured

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def why(self, timeout: float = TIMEOUT) -> str:
        if self.exit_code == TIMED_OUT:
            return f"timed out after {timeout:g} s and was killed"
        if self.exit_code == 127:
            return "not found (exit 127)"
        if self.exit_code < 0:
            return f"killed by signal {-self.exit_code}"
        return f"exit {self.exit_code}"


#: The crawler's own variables that hold credentials, and the one naming where they go:
#: never handed to the command, which may be any upload tool, or sitemap-crawler aimed at
#: another site (for which an origin without its credentials is a setting out of place).
WITHHELD: Final = frozenset(env_var(key) for key in (*SECRET_KEYS, "auth_origin"))


def environment(output: Path, sitemap_url: str, files: Sequence[Path]) -> dict[str, str]:
    """What the command is told: the output folder, the sitemap's public URL and the
    published files (absolute paths, one a line, the entry point last). None of these names
    is a config key: a hook running sitemap-crawler does not take them for its settings."""
    return {
        "SITEMAP_CRAWLER_PUBLISHED_DIR": str(output.resolve()),
        "SITEMAP_CRAWLER_PUBLISHED_URL": sitemap_url,
        "SITEMAP_CRAWLER_PUBLISHED_FILES": "\n".join(str(Path(f).resolve()) for f in files),
    }


def inherited(environ: Mapping[str, str]) -> dict[str, str]:
    """The crawler's environment less its credentials: what the command inherits."""
    return {name: value for name, value in environ.items() if name not in WITHHELD}


#: The signals that stop a run: either one kills the command.
_STOPS: Final = (signal.SIGINT, signal.SIGTERM)

#: The handlers run() found, each put back as it was.
_Handlers = dict[signal.Signals, signal.Handlers | Callable[..., Any] | int]

#: Seconds between looks at the signals held while the command runs: how soon a stop acts.
_POLL_SECONDS: Final = 0.1

#: Seconds the command's output is still read once it has ended or was killed, while a
#: process it left running holds it open; then the line below ends what was read.
_DRAIN_SECONDS: Final = 5.0
HELD_OPEN: Final = "(its output was held open by a process it left running: not read further)"


def run(
    command: str, env: dict[str, str], *, capture: bool = False, timeout: float = TIMEOUT
) -> Outcome:
    """Run `command` to its end or `timeout`. A SIGINT or SIGTERM meanwhile kills it (its
    whole group, as at the timeout) and raises KeyboardInterrupt: it never outlives us,
    and the stop is never lost.

    Both signals are held (recorded, not acted on) from before the command starts until it
    is gone, and looked at between short waits, never raised inside subprocess's code:
    raised inside Popen after the fork, one lost the child, which slept on holding our
    stdout (a container's log, a caller's pipe); raised inside a wait, one could leave its
    lock taken, and the wait after the kill then waited for ever. The handlers are swapped
    with the signals blocked (_blocked, _put_back). A signal ignored (SIG_IGN), or handled
    by a handler not set from Python, is left as it is; off the main thread, both are."""
    held: list[int] = []
    previous: _Handlers = {}
    try:
        if threading.current_thread() is threading.main_thread():
            with _blocked():
                for sig in _STOPS:
                    handler = signal.getsignal(sig)
                    if handler is not None and handler != signal.SIG_IGN:
                        previous[sig] = handler
                        signal.signal(sig, lambda signum, _: held.append(signum))
        outcome = _started(command, env, capture, timeout, held)
    finally:
        if previous:
            _put_back(previous)
    if held:  # a stop as the command ended, or while it was killed at its timeout
        raise KeyboardInterrupt
    return outcome


def _put_back(previous: _Handlers) -> None:
    """The handlers found, all of them: a stop during the swap waits for its end (the
    mask), and one another thread takes (the mask is this thread's), run by a handler just
    put back, raises only once the rest are back too."""
    try:
        with _blocked():
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    finally:
        for sig, handler in previous.items():
            if signal.getsignal(sig) is not handler:
                signal.signal(sig, handler)


@contextlib.contextmanager
def _blocked() -> Iterator[None]:
    """SIGINT and SIGTERM wait (pending) while the handlers are swapped: one in between
    would run a handler that was just put back, or find the other's half changed."""
    before = signal.pthread_sigmask(signal.SIG_BLOCK, ())  # read: a handler raising in
    try:  # the call that changes it would lose the mask to put back
        signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _started(
    command: str, env: dict[str, str], capture: bool, timeout: float, held: list[int]
) -> Outcome:
    try:
        proc = subprocess.Popen(
            ["sh", "-c", command],
            env={**inherited(os.environ), **env},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if capture else None,
            stderr=subprocess.STDOUT if capture else None,
            text=True,
            errors="replace",
            start_new_session=True,  # its own group: killed whole at the timeout
        )
    except OSError as exc:  # no sh
        return Outcome(127, [f"cannot run sh: {exc.strerror or exc}"])
    try:
        return _outcome(proc, held, timeout)
    except BaseException:  # stopped (or failed): the command does not outlive us
        _kill(proc)
        _close(proc)
        raise


def _outcome(proc: subprocess.Popen[str], held: list[int], timeout: float) -> Outcome:
    """Wait for the command, looking at the held signals every _POLL_SECONDS (a
    communicate() timed out is taken up again without losing output). Its output is read
    for at most _DRAIN_SECONDS more once it has ended or been killed at its timeout: a
    process it left running (`setsid ... &`, `ssh -f`) may hold it open for ever."""
    deadline = time.monotonic() + timeout
    code: int | None = None  # once the command has ended, or was killed: its exit code
    drained = math.inf
    while not held:
        try:
            out, _ = proc.communicate(timeout=_POLL_SECONDS)
        except subprocess.TimeoutExpired as exc:
            now = time.monotonic()
            if code is None:
                if now >= deadline:
                    _kill(proc)
                    code, drained = TIMED_OUT, now + _DRAIN_SECONDS
                elif proc.poll() is not None:  # ended, its output held open by another
                    code, drained = proc.returncode, now + _DRAIN_SECONDS
            elif now >= drained:
                _close(proc)
                text = exc.output.decode("utf-8", "replace") if exc.output else ""
                return Outcome(code, [*text.splitlines(), HELD_OPEN])
            continue
        return Outcome(proc.returncode if code is None else code, (out or "").splitlines())
    raise KeyboardInterrupt


def _close(proc: subprocess.Popen[str]) -> None:
    """The command reaped (it has ended, or been killed) and its output's pipe closed."""
    proc.wait()  # no signal raises here: held
    if proc.stdout is not None:
        proc.stdout.close()


def _kill(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
