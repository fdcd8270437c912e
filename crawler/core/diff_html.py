"""The diff's report page (`sitemap-crawler diff --html FILE`): one self-contained HTML file,
made as the audit's (crawler.core.audit_html) and with its stylesheet, so the two reports of
a release read alike.

Every URL comes from a sitemap and is hostile: the lists go into the page only as JSON inside
`<script type="application/json">`, escaped by the audit's helper so no string can end the
element, and the page's script builds rows with `textContent`. The page is made in chunks,
a list's rows read lazily from the spool: a million URLs never make one string in memory,
and the table draws PAGE_ROWS rows at a time.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Final

from crawler.core.audit_html import (
    PAGE_CSS,
    PAGE_ROWS,
    json_for_script,
    number,
    page_head,
    page_tail,
)
from crawler.core.diff import KINDS, Change, Crossed, DiffSummary, Threshold
from crawler.core.diff_report import explained

__all__ = ["render_html"]

_HEADINGS: Final = {
    "removed": "Removed: in OLD, not in NEW",
    "added": "Added: in NEW, not in OLD",
    "moved": "Lastmod moved: in both, with another lastmod",
}


def render_html(
    summary: DiffSummary,
    thresholds: Sequence[Threshold],
    crossed: Sequence[Crossed],
    lists: Mapping[str, Iterable[Change]],
) -> Iterator[str]:
    """The page in chunks; the same input gives the same bytes (no clock, no random ids)."""
    old, new = html.escape(summary.old), html.escape(summary.new)
    if crossed:
        verdict = "Threshold crossed: " + ", ".join(str(c) for c in crossed)
    elif thresholds:
        verdict = "No threshold crossed (" + ", ".join(str(t) for t in thresholds) + ")"
    else:
        verdict = f"{number(summary.removed)} removed, {number(summary.added)} added, " + (
            f"{number(summary.moved)} lastmod moved"
        )
    figures = [
        ("URLs in OLD", summary.old_urls),
        ("URLs in NEW", summary.new_urls),
        ("Removed", summary.removed),
        ("Added", summary.added),
        ("Lastmod moved", summary.moved),
        ("Unchanged", summary.unchanged),
    ]
    figure_html = "".join(
        f'<div class="figure"><dt>{label}</dt><dd>{number(n)}</dd></div>' for label, n in figures
    )
    fetched = "".join(
        f"<p>{html.escape(title.capitalize())}: {html.escape(said)}</p>"
        for title, said in explained(summary)
    )
    heading = f'<span id="old">{old}</span> → <span id="new">{new}</span>'
    yield page_head(
        "diff", f"Sitemap diff: {old} → {new}", heading, html.escape(verdict), PAGE_CSS + _EXTRA_CSS
    )
    yield _SUMMARY.format(figures=figure_html, fetched=fetched)
    for kind in KINDS:
        yield _SECTION.format(kind=kind, heading=_HEADINGS[kind], n=number(summary.count(kind)))
        # a row: [url, old lastmod, new lastmod, verdict, detail]
        yield f'<script type="application/json" id="diff-{kind}">['
        sep = ""
        for change in lists.get(kind, ()):
            row = [
                change.url,
                change.old_lastmod,
                change.new_lastmod,
                change.verdict,
                change.detail,
            ]
            yield sep + json_for_script(row)
            sep = ","
        yield "]</script>\n</section>\n"
    yield page_tail("diff", _JS.replace("PAGE_ROWS", str(PAGE_ROWS)))


_SUMMARY: Final = """<section class="summary" id="summary" aria-label="Summary">
<dl class="figures">{figures}</dl>
<div class="fetched">{fetched}</div>
</section>
"""

_SECTION: Final = """<section class="panel" aria-labelledby="{kind}-title">
<h2 id="{kind}-title">{heading} ({n})</h2>
<div class="filters">
<label class="search"><span>Filter</span>
<input class="filter" type="search" placeholder="Any text: URL, lastmod, verdict"
 autocomplete="off"></label>
<p class="shown" aria-live="polite"></p>
</div>
<noscript><p class="empty">The table needs JavaScript.</p></noscript>
<table class="diff" data-kind="{kind}">
<thead><tr><th scope="col">URL</th><th scope="col">Old lastmod</th>
<th scope="col">New lastmod</th><th scope="col">Verdict</th></tr></thead>
<tbody></tbody>
</table>
<button type="button" class="more" hidden></button>
"""

_EXTRA_CSS: Final = """
.fetched p { margin: .3rem 0; color: var(--muted); }
table.diff td { word-break: break-all; }
"""

_JS: Final = r"""
"use strict";
(function () {
  var PAGE = PAGE_ROWS;
  Array.prototype.forEach.call(document.querySelectorAll("table.diff"), function (table) {
    var kind = table.getAttribute("data-kind");
    var rows = JSON.parse(document.getElementById("diff-" + kind).textContent);
    var panel = table.parentNode, tbody = table.tBodies[0];
    var box = panel.querySelector("input.filter"), shown = panel.querySelector(".shown");
    var more = panel.querySelector("button.more"), view = rows, drawn = 0;
    function text(td, value) {
      if (value === null || value === undefined || value === "") {
        td.textContent = "\u2014"; td.className = "none";
      } else td.textContent = value;
    }
    function row(r) {
      var tr = document.createElement("tr"), td = document.createElement("td");
      td.className = "url";
      if (/^https?:\/\//i.test(r[0])) {
        var a = document.createElement("a");
        a.href = r[0]; a.rel = "noopener noreferrer nofollow"; a.target = "_blank";
        a.textContent = r[0]; td.appendChild(a);
      } else td.textContent = r[0];
      tr.appendChild(td);
      [r[1], r[2], r[3] === null ? null : r[3] + (r[4] ? ": " + r[4] : "")].forEach(
        function (v) { var c = document.createElement("td"); text(c, v); tr.appendChild(c); });
      return tr;
    }
    function draw(upto) {
      var frag = document.createDocumentFragment();
      for (; drawn < upto && drawn < view.length; drawn++) frag.appendChild(row(view[drawn]));
      tbody.appendChild(frag);
      var left = view.length - drawn;
      more.hidden = left <= 0;
      more.textContent = "Show " + Math.min(left, PAGE).toLocaleString("en") + " more (" +
        left.toLocaleString("en") + " not shown)";
      shown.textContent = "Showing " + drawn.toLocaleString("en") + " of " +
        view.length.toLocaleString("en") + " URLs";
    }
    function update() {
      var q = box.value.trim().toLowerCase();
      view = !q ? rows : rows.filter(function (r) {
        return r.join("\n").toLowerCase().indexOf(q) !== -1;
      });
      tbody.textContent = ""; drawn = 0; draw(PAGE);
    }
    box.addEventListener("input", update);
    more.addEventListener("click", function () { draw(drawn + PAGE); });
    update();
  });
})();
"""
