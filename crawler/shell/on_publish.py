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
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

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


def run(
    command: str, env: dict[str, str], *, capture: bool = False, timeout: float = TIMEOUT
) -> Outcome:
    # SIGINT/SIGTERM while the command is being started are held until it exists: one raised
    # inside Popen, after the fork, would lose the child, which would sleep on holding our
    # stdout (a container's log, a caller's pipe) after we had gone
    held: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, _: held.append(signum)) for sig in _STOPS}
    try:
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
            signal.signal(signal.SIGINT, previous[signal.SIGINT])
            signal.signal(signal.SIGTERM, _interrupt)  # else the command outlives us
            if held:
                raise KeyboardInterrupt
            out, _ = proc.communicate(timeout=timeout)
            code = proc.returncode
        except subprocess.TimeoutExpired:
            _kill(proc)
            out, _ = proc.communicate()
            code = TIMED_OUT
        except BaseException:  # interrupted: the command does not outlive the crawler
            _kill(proc)
            proc.wait()
            raise
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return Outcome(code, (out or "").splitlines())


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _kill(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
