"""The audit as one self-contained HTML page (--html FILE).

PLACEHOLDER: the audit-html branch of #12 replaces this module whole (same interface, with
the chart and the sortable, filterable table). Until then: a plain, valid page listing the
summary and every finding, everything escaped (the findings quote other people's sitemaps).
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from crawler.core.findings import AuditSummary, Finding, ordered

__all__ = ["render_html"]


def render_html(summary: AuditSummary, findings: Sequence[Finding]) -> str:
    totals = summary.by_severity()
    rows = "\n".join(
        "<tr>"
        + "".join(
            f"<td>{escape(str(value) if value is not None else '')}</td>"
            for value in (f.severity, f.code, f.sitemap, f.line, f.url, f.detail)
        )
        + "</tr>"
        for f in ordered(findings)
    )
    counts = ", ".join(f"{n} {severity}" for severity, n in totals.items())
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>Sitemap audit of {escape(summary.target)}</title></head><body>\n"
        f"<h1>Sitemap audit of {escape(summary.target)}</h1>\n"
        f"<p>{summary.sitemaps_read} sitemap files read, {summary.urls_listed} URLs listed, "
        f"{summary.urls_checked} checked; {escape(counts)}</p>\n"
        "<table><thead><tr><th>severity</th><th>code</th><th>sitemap</th><th>line</th>"
        f"<th>url</th><th>detail</th></tr></thead><tbody>\n{rows}\n</tbody></table>\n"
        "</body></html>\n"
    )
