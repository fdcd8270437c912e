"""One exit-code table (crawler/exit_codes.py): --help, the README and the commands agree with
it, and no answer shares a code with a failure."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from crawler import cli
from crawler.errors import SitemapCrawlerError
from crawler.exit_codes import MEANINGS, Exit, help_text, markdown_table
from tests.procs import child_env

README = Path(__file__).resolve().parents[1] / "README.md"
COMMANDS = ("crawl", "job", "explain", "robots", "audit", "submit")


def test_an_answer_never_shares_a_code_with_a_failure() -> None:
    assert len(set(Exit)) == len(Exit)  # no two names for one code
    for command, meanings in MEANINGS.items():
        assert meanings[Exit.FAILURE].startswith("unexpected failure"), command
        assert Exit.NO != Exit.FAILURE == 70
    assert SitemapCrawlerError.exit_code == Exit.FAILURE


def test_the_readme_holds_the_table() -> None:
    assert markdown_table() in README.read_text(encoding="utf-8")
    # a column for every command of MEANINGS (job shares crawl's)
    head = markdown_table().splitlines()[0]
    for command in MEANINGS:
        assert f" {command} " in head or f" {command}," in head, command


@pytest.mark.parametrize("command", COMMANDS)
def test_help_shows_the_commands_column(command: str, capsys) -> None:
    with pytest.raises(SystemExit):
        cli.main([command, "--help"])
    out = capsys.readouterr().out
    flat = lambda text: re.sub(r"\s+", " ", text)  # noqa: E731
    assert flat(help_text(command)) in flat(out)


@pytest.mark.parametrize(
    ("command", "runner", "args"),
    [
        ("crawl", "_crawl", ["http://127.0.0.1:9/"]),
        ("job", "_job", []),
        ("explain", "_explain", ["http://127.0.0.1:9/"]),
        ("robots", "_robots_command", ["http://127.0.0.1:9/"]),
        ("audit", "_audit_run", ["http://127.0.0.1:9/"]),
    ],
)
def test_an_unexpected_failure_is_70_in_every_command(
    command, runner, args, monkeypatch, capsys, tmp_path
) -> None:
    def bug(*_: object) -> int:
        raise RuntimeError("a bug")

    monkeypatch.setattr(cli, runner, bug)
    monkeypatch.delenv("SITEMAP_CRAWLER_DEBUG", raising=False)
    monkeypatch.chdir(tmp_path)
    assert cli.main([command, *args]) == Exit.FAILURE == 70
    err = capsys.readouterr().err
    assert "unexpected failure: RuntimeError: a bug" in err and len(err.splitlines()) == 1


#: The command as the console script runs it (crawler.cli.console_main), reporting at exit (atexit
#: runs after run's freeze) whether the run's objects were left frozen
_AS_THE_SCRIPT = (
    "import atexit, gc, runpy, sys\n"
    "atexit.register(lambda: print('frozen:', gc.get_freeze_count() > 0, file=sys.stderr))\n"
    "sys.argv = ['sitemap-crawler', *sys.argv[1:]]\n"
    "runpy.run_module('crawler.cli', run_name='__main__')\n"
)


@pytest.mark.parametrize(
    ("args", "code", "line"),
    [
        (["--version"], Exit.OK, None),
        (["crawl", "ftp://example.invalid/"], Exit.USAGE, "sitemap-crawler: "),
    ],
)
def test_the_command_exits_with_mains_code_leaving_its_objects_to_the_system(
    args: list[str], code: int, line: str | None, tmp_path: Path
) -> None:
    """`python -m crawler.cli` and the `sitemap-crawler` script (pyproject's console_main) exit
    with main's code and its one-line error, their objects frozen, not freed one by one by
    the interpreter's last collection (#26); atexit handlers still run."""
    pyproject = tomllib.loads((README.parent / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["scripts"]["sitemap-crawler"] == "crawler.cli:console_main"
    done = subprocess.run(
        [sys.executable, "-c", _AS_THE_SCRIPT, *args], cwd=tmp_path, env=child_env(),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == code, done.stderr
    lines = done.stderr.splitlines()
    assert lines[-1] == "frozen: True"
    if line is None:
        assert len(lines) == 1 and done.stdout.startswith("sitemap-crawler ")
    else:
        assert len(lines) == 2 and lines[0].startswith(line)
