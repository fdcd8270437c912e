"""The outputs of `sitemap-crawler diff`: the terminal's text and the --report JSON. Pure
(strings out), so the layout is tested without a run.

As the audit's (crawler.core.audit_text): the figures first, then each list cut after a
few lines with a count, so a million URLs removed do not scroll the verdict away; the
report has every URL. The JSON comes out in chunks, a URL a line, from lists read lazily
from the spool: a million-URL report is never one string.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

from crawler.core.diff import (
    INDEXABLE,
    KINDS,
    NOT_CHECKED,
    NOT_MET,
    Change,
    Crossed,
    DiffSummary,
    Threshold,
    measure,
)
from crawler.core.findings import CODES

__all__ = [
    "LIST_LINES",
    "explained",
    "fail_on_json",
    "render_json",
    "render_text",
    "verdict_text",
]

#: URLs shown per list on the terminal before "... and N more".
LIST_LINES: Final = 20

_TITLES: Final = {
    "removed": "removed (in OLD, not in NEW)",
    "added": "added (in NEW, not in OLD)",
    "moved": "lastmod moved (in both, another lastmod)",
}


def _n(n: int) -> str:
    return f"{n:,}"


def _urls(n: int) -> str:
    return f"{_n(n)} URL" if n == 1 else f"{_n(n)} URLs"


def verdict_text(kind: str, counts: Mapping[str, int], explained_by: str | None = None) -> str:
    """A list's verdicts in a line: what a release gate reader must see at once."""
    ok = counts.get(INDEXABLE, 0)
    unchecked, unmet = counts.get(NOT_CHECKED, 0), counts.get(NOT_MET, 0)
    bad = {c: n for c, n in counts.items() if c not in (INDEXABLE, NOT_CHECKED, NOT_MET)}
    gone = sum(bad.values())
    detail = ", ".join(f"{code} {_n(n)}" for code, n in sorted(bad.items(), key=lambda kv: -kv[1]))
    detail = f" ({detail})" if detail else ""
    if explained_by == "decisions":
        parts = [f"{_n(gone)} left out by NEW's crawl{detail}"]
    elif kind == "removed":
        parts = [
            f"{_n(gone)} now not indexable{detail}",
            f"{_n(ok)} still 200 and indexable",
        ]
    else:
        parts = [f"{_n(ok)} indexable", f"{_n(gone)} not indexable{detail}"]
    if unmet:
        parts.append(f"{_n(unmet)} never met by NEW's crawl (no link reaches them)")
    if unchecked:
        parts.append(f"{_n(unchecked)} not checked")
    return ", ".join(parts)


def explained(summary: DiffSummary) -> list[tuple[str, str]]:
    """(kind, its verdicts in a line) for each list with verdicts, as every output says it."""
    how = "fetched" if summary.explained_by == "fetch" else "by NEW's decisions"
    return [
        (f"{kind}, {how}", verdict_text(kind, counts, summary.explained_by))
        for kind, counts in summary.verdicts.items()
    ]


def render_text(
    summary: DiffSummary,
    heads: Mapping[str, Sequence[Change]],
    thresholds: Sequence[Threshold],
    crossed: Sequence[Crossed],
    *,
    lines: int = LIST_LINES,
) -> str:
    """`heads`: the first `lines` URLs (or more) of each list, sorted."""
    out = [
        f"diff of {summary.old} -> {summary.new}: {_urls(summary.old_urls)} before, "
        f"{_urls(summary.new_urls)} after, {summary.seconds:.1f} s",
        f"removed {_n(summary.removed)}, added {_n(summary.added)}, lastmod moved "
        f"{_n(summary.moved)}, unchanged {_n(summary.unchanged)}",
    ]
    both = summary.moved + summary.unchanged
    if both and summary.lastmods_compared < both:
        out.append(
            f"  lastmod compared for {_n(summary.lastmods_compared)} of the {_n(both)} URLs in "
            "both (a text sitemap or a decisions file has none)"
        )
    for title, said in explained(summary):
        out.append(f"  {title}: {said}")
    for kind in KINDS:
        total = summary.count(kind)
        if not total:
            continue
        out.append("")
        out.append(f"{_TITLES[kind]}: {_n(total)}")
        for change in heads.get(kind, ())[:lines]:
            out.append("  " + _line(change))
        if total > lines:
            out.append(
                f"  ... and {_n(total - lines)} more (--report FILE or --html FILE lists all)"
            )
    if thresholds:
        out.append("")
        if crossed:
            out.append("fail-on crossed: " + ", ".join(str(c) for c in crossed))
        else:
            out.append("fail-on: " + ", ".join(str(t) for t in thresholds) + ": none crossed")
    return "\n".join(out) + "\n"


def _line(change: Change) -> str:
    parts = [change.url]
    if change.kind == "moved":
        parts.append(f"{change.old_lastmod} -> {change.new_lastmod}")
    if change.verdict is not None:
        said = change.verdict if change.verdict in CODES else change.verdict.replace("_", " ")
        parts.append(f"[{said}: {change.detail}]" if change.detail else f"[{said}]")
    return "  ".join(parts)


def fail_on_json(thresholds: Sequence[Threshold], summary: DiffSummary) -> list[Any]:
    """Each threshold, its value (null for a share of an empty OLD) and whether crossed."""
    found = []
    for threshold in thresholds:
        value = measure(threshold, summary)
        found.append(
            {
                "threshold": str(threshold),
                "value": None if math.isinf(value) else round(value, 3),
                "crossed": value > threshold.limit,
            }
        )
    return found


def render_json(
    summary: DiffSummary,
    thresholds: Sequence[Threshold],
    lists: Mapping[str, Iterable[Change]],
) -> Iterator[str]:
    """The --report file in chunks: the summary and the thresholds, then each list whole,
    one URL a line."""
    yield "{\n"
    yield f'"summary": {json.dumps(summary.to_json(), ensure_ascii=False, indent=2)},\n'
    yield f'"fail_on": {json.dumps(fail_on_json(thresholds, summary), ensure_ascii=False)}'
    for kind in KINDS:
        yield f',\n"{kind}": ['
        sep = "\n"
        for change in lists.get(kind, ()):
            yield sep + json.dumps(change.to_json(), ensure_ascii=False)
            sep = ",\n"
        yield "\n]"
    yield "\n}\n"
