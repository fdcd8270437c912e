"""The C heap's thresholds (crawler.shell.heap, #26): glibc keeps the heap's top between
pages rather than giving it back and faulting it in again, unless the user tuned malloc."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

from crawler import cli
from crawler.shell import heap
from tests.procs import child_env

GLIBC = platform.libc_ver()[0] == "glibc"

#: A page's churn as the C heap sees it: blocks over 100 KB taken and given back together,
#: 300 times; prints what keep_heap answered (or None: not called) and the minor page faults
_CHURN = """
import resource, sys
from crawler.shell.heap import keep_heap
kept = keep_heap() if sys.argv[1] == "keep" else None
def churn(rounds):
    for _ in range(rounds):
        a, b, c = b"a" * 110_000, b"b" * 110_000, b"c" * 110_000
        del a, b, c
churn(10)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
churn(300)
print(kept, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _churn(mode: str, **env: str) -> tuple[str, int]:
    ours = {k: v for k, v in child_env().items() if not k.startswith(("MALLOC_", "GLIBC_"))}
    clean = {**ours, **env}  # malloc tuned as the test says, not as this machine may be
    done = subprocess.run(
        [sys.executable, "-c", _CHURN, mode], env=clean, capture_output=True, text=True,
        timeout=60, check=True,
    )  # fmt: skip
    kept, faults = done.stdout.split()
    return kept, int(faults)


@pytest.mark.skipif(not GLIBC, reason="glibc's malloc only: other C libraries are left alone")
def test_the_heap_top_is_kept_between_pages_not_faulted_in_again() -> None:
    """At glibc's defaults each round gives its 330 KB back and faults it in again (about
    80 faults a round); with the thresholds set, none after the first rounds."""
    _, untouched = _churn("leave")
    kept, faults = _churn("keep")
    assert kept == "True"
    assert untouched > 300 * 40  # the defaults, as the module says they behave
    assert faults < 300  # the top kept: no round faults its blocks in again


@pytest.mark.skipif(not GLIBC, reason="glibc's malloc only")
@pytest.mark.parametrize(
    "env",
    [
        {"MALLOC_TRIM_THRESHOLD_": "131072"},
        {"MALLOC_ARENA_MAX": "2"},
        {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=131072"},
    ],
)
def test_a_user_who_tuned_malloc_keeps_their_settings(env: dict[str, str]) -> None:
    """keep_heap sets nothing when malloc is tuned through the environment: the trim the
    user asked for happens (the churn faults as at the defaults)."""
    kept, faults = _churn("keep", **env)
    assert kept == "False"
    assert faults > 300 * 40


def test_other_c_libraries_are_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heap.platform, "libc_ver", lambda: ("musl", "1.2"))
    assert heap.keep_heap() is False


def test_the_command_keeps_the_heap_before_main(monkeypatch: pytest.MonkeyPatch) -> None:
    """The console command (crawler.cli.console_main) sets the thresholds before main runs,
    so the workers a crawl forks inherit them."""
    calls: list[str] = []
    monkeypatch.setattr(cli, "keep_heap", lambda: calls.append("heap") or True)
    monkeypatch.setattr(cli, "main", lambda: calls.append("main") or 0)
    with pytest.raises(SystemExit) as leaving:
        cli.console_main()
    assert leaving.value.code == 0 and calls == ["heap", "main"]
    assert os.environ.get("MALLOC_TRIM_THRESHOLD_") is None  # set by mallopt, not inherited
