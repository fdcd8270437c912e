"""The steps after a publish (crawler/shell/after_publish.py): a signal between two steps
is the next one's interruption, with its code, never 130's "untouched"."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from crawler.errors import SubmitFailed
from crawler.exit_codes import Exit
from crawler.shell.after_publish import Steps


class _Sent:
    def figures(self) -> dict[str, Any]:
        return {"to": "s3://b/"}

    def summary(self) -> str:
        return "uploaded"


class _Uploader:
    target = SimpleNamespace(url="s3://b/")

    def run(self, files: list[Path], log: Any) -> _Sent:
        return _Sent()


class _SignalledAfterTheUpload(Steps):
    def _submit(self, result: Any, figures: dict[str, Any]) -> str | None:
        raise KeyboardInterrupt  # as SIGTERM raises it, before submit's own handling


def test_a_signal_between_two_steps_is_the_next_steps_interruption(tmp_path):
    config = SimpleNamespace(
        output=tmp_path, on_publish=None, submit=("google",), secrets=[], log_format="text",
        stylesheet=False, stylesheet_url=None,
    )  # fmt: skip
    published = SimpleNamespace(published=SimpleNamespace(url_count=3, files=[]))
    figures: dict[str, Any] = {}
    failed = _SignalledAfterTheUpload(config, _Uploader(), note=None).run(published, figures)
    assert isinstance(failed, SubmitFailed) and failed.exit_code == Exit.SUBMIT
    assert str(failed) == f"published 3 URLs to {tmp_path}, but submitting it was interrupted"
    assert figures["publish_to"] == {"to": "s3://b/"}
    nothing = SimpleNamespace(**{**vars(config), "submit": ()})
    assert _SignalledAfterTheUpload(nothing, _Uploader()).run(published, {}) is None
