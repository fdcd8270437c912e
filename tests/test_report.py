"""crawler.core.report: the decisions file's line format."""

from __future__ import annotations

import dataclasses
import json

from crawler.core.report import DecisionRecord


def test_a_decision_line_keeps_its_format() -> None:
    record = DecisionRecord("https://example.com/é", 301, "redirect", "https://e.com/", 2, None)
    assert record.to_json() == (
        '{"url": "https://example.com/é", "status": 301, "listed": false, '
        '"reason": "redirect", "detail": "https://e.com/", "depth": 2, "referrer": null}'
    )
    listed = DecisionRecord("https://example.com/", 200, "listed", "", 0, "https://example.com/r")
    assert json.loads(listed.to_json())["listed"] is True


def test_a_decision_line_carries_every_field_by_name() -> None:
    record = DecisionRecord("https://example.com/a", None, "out_of_scope", "x", 1, "r")
    line = json.loads(record.to_json())
    fields = {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}
    assert line == {**fields, "listed": False}


def test_the_summary_says_what_its_failure_count_counts():
    from crawler.core.report import Tally

    tally = Tally(fetched=10, failed=3, seconds=2.0)
    tally.reasons["listed"] = 7
    tally.reasons["http_error"] = 3
    line = tally.summary()
    assert line.endswith("3 requests failed (5xx or no answer, after retries)")
    assert "errors" not in line
