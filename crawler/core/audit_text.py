"""The audit in the terminal: the figures first, then the findings grouped by code, worst
first. Pure (a string out), so the layout is tested without a run.

A group is cut after a few lines with a count: a sitemap with 50,000 bad lastmods must not
bury the one nested index above it; --json has every finding.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from crawler.core.findings import CODES, AuditSummary, Finding, ordered

__all__ = ["GROUP_LINES", "render_text"]

#: Findings shown per code before "... and N more".
GROUP_LINES: Final = 10


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def render_text(
    summary: AuditSummary, findings: Sequence[Finding], *, group_lines: int = GROUP_LINES
) -> str:
    lines = [
        f"audit of {summary.target}: {_plural(summary.sitemaps_read, 'sitemap file')} read, "
        f"{_plural(summary.urls_listed, 'URL')} listed, {summary.urls_checked} checked, "
        f"{summary.seconds:.1f} s",
    ]
    totals = summary.by_severity()
    lines.append("findings: " + ", ".join(_plural(n, severity) for severity, n in totals.items()))
    groups: dict[str, list[Finding]] = {}
    for finding in ordered(findings):
        groups.setdefault(finding.code, []).append(finding)
    width = max((len(code) for code in groups), default=0)
    for code, group in groups.items():
        lines.append(f"  {code:<{width}}  {len(group):>6}  {CODES[code].severity}")
    for code, group in groups.items():
        meaning = CODES[code]
        lines.append("")
        lines.append(f"{meaning.severity} {code}: {meaning.text} ({len(group)})")
        for finding in group[:group_lines]:
            lines.append("  " + _line(finding))
        if len(group) > group_lines:
            lines.append(f"  ... and {len(group) - group_lines} more")
    return "\n".join(lines) + "\n"


def _line(finding: Finding) -> str:
    where = finding.sitemap or ""
    if finding.line is not None:
        where += f":{finding.line}"
    parts = [part for part in (where, finding.url, finding.detail) if part]
    return "  ".join(parts)
