"""Child processes in tests: they run this checkout's code, and tests wait on signs, not time.

A child Python process imports the packages of the checkout under test (PYTHONPATH is the repo
root), never an installed copy, and the CLI is run by the interpreter running the tests
(`sys.executable -m crawler.cli`), so no test depends on the `sitemap-crawler` script being on
PATH. A test that must act while a child runs waits for a sign that the moment has come (the
server saw N requests, a line on the child's stderr) with a deadline, and says what it waited
for when the deadline passes.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, NoReturn

REPO = Path(__file__).resolve().parents[1]
CLI = (sys.executable, "-m", "crawler.cli")
#: The CLI, run as `python -c PEAK_RSS_CLI ARGS...`, adding its own peak RSS (KiB) as its last
#: stderr line: VmHWM, of its own address space (ru_maxrss would count the pages of the
#: process that forked it, as Linux carries it across exec). For memory tests and benchmarks.
#: The heap is kept as the console command keeps it (crawler.shell.heap).
PEAK_RSS_CLI = (
    "import sys\n"
    "from crawler.cli import main\n"
    "from crawler.shell.heap import keep_heap\n"
    "keep_heap()\n"
    "code = main(sys.argv[1:])\n"
    "status = open('/proc/self/status').read().split('VmHWM:')[1]\n"
    "print(status.split()[0], file=sys.stderr)\n"
    "sys.exit(code)\n"
)


#: a folder holding this checkout's packages as a wheel built them (tests/test_compiled.py's,
#: the modules compiled by mypyc): a child imports them from there, before the checkout's
BUILD_VARIABLE = "SITEMAP_CRAWLER_TEST_BUILD"


def child_env(**extra: str) -> dict[str, str]:
    """os.environ for a child process that imports this checkout's code, plus `extra`."""
    build = os.environ.get(BUILD_VARIABLE)
    path = [*filter(None, [build]), str(REPO)]
    path += filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path), **extra}


def _ended(proc: subprocess.Popen[str] | Watched) -> str:
    """Why a child stopped early, with what it wrote: for a failure message."""
    try:
        out, err = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:  # a process it started holds its pipes open
        out = err = "(not read: its pipes are still open, held by a process it started?)"
    return f"exit code {proc.poll()}\n--- stdout ---\n{out or ''}\n--- stderr ---\n{err or ''}"


def wait_for(
    condition: Callable[[], object],
    what: str,
    *,
    timeout: float = 30.0,
    proc: subprocess.Popen[str] | Watched | None = None,
) -> None:
    """Poll `condition` until it holds. Fails, saying `what` was awaited, when `timeout`
    seconds pass or when `proc` (the child whose progress is awaited) ends first; on a
    timeout, `proc` is killed so that it does not outlive the test."""
    deadline = time.monotonic() + timeout
    while not condition():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the child process ended before {what}: {_ended(proc)}")
        if time.monotonic() > deadline:
            detail = ""
            if proc is not None:
                proc.kill()
                detail = f"; the child was killed: {_ended(proc)}"
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}{detail}")
        time.sleep(0.01)


def interrupted(
    argv: list[str],
    condition: Callable[[], object],
    what: str,
    *,
    env: dict[str, str],
    then: Callable[[], object] = lambda: None,
) -> tuple[int, str]:
    """Run argv, send it SIGTERM once `condition` holds (`then` runs right after: releasing
    what held the step), and return its exit code and stderr: a run stopped in a chosen step."""
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        wait_for(condition, what, proc=proc)
        proc.send_signal(signal.SIGTERM)
        then()
    finally:
        _, err = proc.communicate(timeout=30)
    return proc.returncode, err


class Watched:
    """A child whose stdout and stderr are read by threads as it runs, so a test can wait for
    a line on its stderr, and neither pipe fills while the test waits.

    Stands in for the Popen where the test goes on: send_signal, kill, poll, pid, returncode,
    and communicate() (which returns everything the child wrote)."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None and proc.stderr is not None, "start it with PIPEs"
        self.proc = proc
        self._changed = threading.Condition()
        self._out: list[str] = []
        self._err: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, args=(proc.stdout, self._out), daemon=True),
            threading.Thread(target=self._read, args=(proc.stderr, self._err), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _read(self, stream: IO[str], lines: list[str]) -> None:
        with stream:  # closed at its end: left to the collector, an unclosed file's warning
            for line in stream:
                with self._changed:
                    lines.append(line)
                    self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    def poll(self) -> int | None:
        return self.proc.poll()

    def send_signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def kill(self) -> None:
        self.proc.kill()

    def stderr_line(self, text: str, timeout: float = 30.0) -> str:
        """Wait for a line containing `text` on the child's stderr; fail if the child ends
        or `timeout` seconds pass first. Returns the line."""

        def found() -> str | None:
            return next((line for line in self._err if text in line), None)

        def done() -> bool:
            return found() is not None or not self._readers[1].is_alive()

        with self._changed:
            self._changed.wait_for(done, timeout)
            line = found()
        if line is None:
            what = f"a line with {text!r} on the child's stderr"
            if self.poll() is not None or not self._readers[1].is_alive():
                raise AssertionError(f"the child process ended before {what}: {_ended(self)}")
            self.kill()
            raise AssertionError(
                f"timed out after {timeout:g} s waiting for {what}; "
                f"the child was killed: {_ended(self)}"
            )
        return line

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        """Wait for the child to end (TimeoutExpired as Popen's) and for its pipes to close."""
        self.proc.wait(timeout)
        for reader in self._readers:
            reader.join(timeout)
        with self._changed:
            return "".join(self._out), "".join(self._err)


def imports_of_a_crawl(argv: list[str], modules: tuple[str, ...]) -> tuple[int, list[str], str]:
    """Run the CLI with argv in a fresh interpreter: its exit code, which of `modules` it had
    imported when it ended, and its stderr. For tests that a run does not pay for an import
    it does not use (a fresh process: this one has imported everything)."""
    script = (
        "import sys\n"
        "from crawler.cli import main\n"
        f"code = main({argv!r})\n"
        f"print(code, *[m for m in {modules!r} if m in sys.modules])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=child_env(),
    )
    code, *loaded = done.stdout.split() or ["-1"]
    return int(code), loaded, done.stderr


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1")


def missing(why: str, *, module: bool = False) -> NoReturn:
    """A test's tool or condition is missing: skip with the reason on a developer's
    machine, fail in CI (CI=true), where .ci/run installs everything a test needs.
    `module`: called while collecting a test module, to skip (or fail) all of it."""
    import pytest

    if in_ci():
        pytest.fail(f"{why}; CI must have it (.ci/run installs what the tests need)")
    pytest.skip(why, allow_module_level=module)


#: the variable naming the folder of test data shared with the other tools of the project
#: (sitemaps.org's XSDs in schemas/, protego's robots.txt cases in conformance/): it is not
#: part of this repository. Default: `shared` next to the checkout (../shared).
SHARED_VARIABLE = "SITEMAP_CRAWLER_SHARED"


def shared(part: str, *, module: bool = False) -> Path:
    """The folder `part` of the shared test data; when it is absent, the test asking for it
    is skipped saying where it was looked for and how to name another place (in CI, it fails).
    """
    root = Path(os.environ.get(SHARED_VARIABLE) or REPO.parent / "shared")
    folder = root / part
    if not folder.is_dir():
        missing(
            f"no shared test data at {folder} (the project's shared/{part} folder, not part of"
            f" this repository): put shared/ next to the checkout or set {SHARED_VARIABLE}"
            " to its path",
            module=module,
        )
    return folder


@contextlib.contextmanager
def unwritable(path: Path) -> Iterator[Path]:
    """`path` (a file or folder) made unwritable for this process, even as root: the mode
    bits for a user, the immutable attribute (chattr +i) for root, who ignores the bits."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(0o555 if path.is_dir() else 0o444)
        try:
            yield path
        finally:
            path.chmod(mode)
        return
    if shutil.which("chattr") is None:
        missing("chattr(1) to make a path unwritable for root (apt-get install e2fsprogs)")
    made = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
    if made.returncode != 0:
        missing(f"chattr +i refused on {path}: {made.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)
