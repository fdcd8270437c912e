"""The audit's report page (`sitemap-crawler audit --html FILE`): one self-contained HTML file.

A pure function of the summary and the findings, so the CLI only writes the string it gets.
The page must open from a mail attachment or a CI artefact, so it holds everything it needs
(inline CSS, JS and SVG) and asks the network for nothing.

Everything a finding carries comes from the audited site and is hostile: a URL, a detail or a
sitemap name may hold `<script>` or `</script>`. The findings therefore go into the page only as
JSON inside `<script type="application/json">`, with `<`, `>`, `&` and U+2028/U+2029 written as
`\\uXXXX` escapes, so no string can end the script element; the page's script builds the table
rows from that JSON with `textContent` and never parses data as HTML. The few figures drawn
server-side (the target, the chart) go through `html.escape`.

A big audit (100,000 findings) stays usable: the JSON is a compact array per finding (the
sitemap names, repeated on every row, are stored once), its size grows linearly with the
findings, and the table renders only the first `PAGE_ROWS` rows of the current order and
filter, with a button for the next ones; sorting and filtering work on the whole data set.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Sequence
from typing import Final
from urllib.parse import urlsplit

from crawler.core.findings import CODES, SEVERITIES, AuditSummary, Finding, ordered

__all__ = [
    "PAGE_CSS",
    "PAGE_ROWS",
    "json_for_script",
    "number",
    "page_head",
    "page_tail",
    "render_html",
]

#: Rows drawn at once; the rest wait for "Show more", so 100,000 findings do not freeze the tab.
PAGE_ROWS: Final = 500

# In JSON, these characters only occur inside strings, where their escapes mean the same;
# escaped, no string can close the <script> element or start a comment in it.
_JSON_ESCAPES: Final = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def json_for_script(data: object) -> str:
    """data as JSON that is safe inside a <script> element, whatever its strings hold."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.translate(_JSON_ESCAPES)


def number(n: int) -> str:
    return f"{n:,}"


def page_head(tool: str, title: str, heading: str, verdict: str, css: str) -> str:
    """A report page (audit, diff) up to its <main>, the same for each so the reports look
    and read alike. Every argument is HTML already (the caller escapes what it quotes)."""
    return _HEAD.format(tool=tool, title=title, heading=heading, verdict=verdict, css=css)


def page_tail(tool: str, js: str, data: str = "") -> str:
    """The page from the end of its <main>: the footer and the script (after `data`, the
    <script type="application/json"> elements the script reads, if any)."""
    return _TAIL.format(tool=tool, js=js, data=data)


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {rest:02d} s"


def _plural(n: int, word: str) -> str:
    return f"{number(n)} {word}{'' if n == 1 else 's'}"


def _origin(target: str) -> str | None:
    """The target's scheme and host: the table shows a sitemap of that site by its path,
    which is what tells two sitemaps apart (the whole URL is in the cell's tooltip)."""
    parts = urlsplit(target)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}"


def _worst_first(counts: Counter[str]) -> list[str]:
    """The codes found, in the order of every output: by severity, then the table of codes."""
    return sorted(
        (code for code in CODES if counts.get(code)),
        key=lambda c: SEVERITIES.index(CODES[c].severity),
    )


def _chart(counts: Counter[str]) -> str:
    """One row per code, worst first: the code and its meaning, an SVG bar scaled to the
    largest count (coloured by severity), and the count. The rows are HTML around small
    SVGs so the labels keep their size in a narrow window, where one scaled SVG would not."""
    codes = _worst_first(counts)
    if not codes:
        return '<p class="empty">No findings: nothing for a search engine to complain about.</p>'
    top = max(counts[c] for c in codes)
    rows = []
    for code in codes:
        info, n = CODES[code], counts[code]
        width = max(100.0 * n / top, 0.6)
        tip = html.escape(f"{code} ({info.severity}): {info.text}: {n:,}")
        rows.append(
            f'<button type="button" class="bar-row sev-{info.severity}" data-code="{code}"'
            f' title="{tip}">'
            f'<span class="bar-label"><code>{code}</code>'
            f'<span class="bar-text">{html.escape(info.text)}</span></span>'
            f'<svg class="bar" viewBox="0 0 100 10" preserveAspectRatio="none"'
            f' role="img" aria-label="{_plural(n, "finding")}">'
            f"<title>{tip}</title>"
            f'<rect x="0" y="0" width="{width:.2f}" height="10" rx="1"/></svg>'
            f'<span class="bar-count">{number(n)}</span></button>'
        )
    return f'<div class="chart" role="list">{"".join(rows)}</div>'


def render_html(summary: AuditSummary, findings: Sequence[Finding]) -> str:
    """The report page for one audit; the same input gives the same bytes (no clock, no
    random ids), so two reports of one site can be diffed."""
    rows = ordered(findings)
    counts: Counter[str] = (
        Counter(summary.counts) if summary.counts else Counter(f.code for f in rows)
    )
    by_severity = dict.fromkeys(SEVERITIES, 0)
    for code, n in counts.items():
        by_severity[CODES[code].severity] += n

    sitemaps: dict[str, int] = {}
    for f in rows:
        if f.sitemap is not None:
            sitemaps.setdefault(f.sitemap, len(sitemaps))
    code_names = list(CODES)
    code_index = {code: i for i, code in enumerate(code_names)}
    data = {
        "severities": list(SEVERITIES),
        "codes": [[c, SEVERITIES.index(CODES[c].severity), CODES[c].text] for c in code_names],
        "sitemaps": list(sitemaps),
        "origin": _origin(summary.target),
        "pageRows": PAGE_ROWS,
        # one finding: [code index, sitemap index or null, line, url, detail]
        "findings": [
            [
                code_index[f.code],
                None if f.sitemap is None else sitemaps[f.sitemap],
                f.line,
                f.url,
                f.detail,
            ]
            for f in rows
        ],
    }

    target = html.escape(summary.target)
    figures = [
        ("Sitemaps read", number(summary.sitemaps_read)),
        ("URLs listed", number(summary.urls_listed)),
        ("URLs checked", number(summary.urls_checked)),
        ("Time", _duration(summary.seconds)),
    ]
    figure_html = "".join(
        f'<div class="figure"><dt>{label}</dt><dd>{value}</dd></div>' for label, value in figures
    )
    severity_html = "".join(
        f'<button type="button" class="sev-card sev-{sev}" data-severity="{sev}"'
        f' title="Show only the {sev}s"><span class="sev-n">{number(by_severity[sev])}</span>'
        f'<span class="sev-name">{sev}{"" if by_severity[sev] == 1 else "s"}</span></button>'
        for sev in SEVERITIES
    )
    total = sum(counts.values())
    verdict = (
        "No findings"
        if not total
        else ", ".join(_plural(by_severity[s], s) for s in SEVERITIES if by_severity[s])
    )
    code_options = "".join(
        f'<option value="{code}">{code} ({number(counts[code])})</option>'
        for code in _worst_first(counts)
    )
    severity_options = "".join(
        f'<option value="{sev}">{sev}</option>' for sev in SEVERITIES if by_severity[sev]
    )
    headers = "".join(
        f'<th scope="col" data-key="{key}" class="col-{key}" aria-sort="none">'
        f'<button type="button">{label}<span class="arrow" aria-hidden="true"></span></button></th>'
        for key, label in _COLUMNS
    )
    body = _BODY.format(
        figures=figure_html,
        severities=severity_html,
        chart=_chart(counts),
        severity_options=severity_options,
        code_options=code_options,
        headers=headers,
    )
    script = f'<script type="application/json" id="audit-data">{json_for_script(data)}</script>\n'
    return (
        page_head("audit", f"Sitemap audit: {target}", target, html.escape(verdict), PAGE_CSS)
        + body
        + page_tail("audit", _JS, script)
    )


_COLUMNS: Final = (
    ("severity", "Severity"),
    ("code", "Code"),
    ("url", "URL"),
    ("sitemap", "Sitemap"),
    ("line", "Line"),
    ("detail", "Detail"),
)

_HEAD: Final = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="sitemap-crawler {tool}">
<title>{title}</title>
<style>{css}</style>
</head>
<body>
<header>
<p class="kicker">Sitemap {tool}</p>
<h1 id="target">{heading}</h1>
<p class="verdict" id="verdict">{verdict}</p>
</header>
<main>
"""

_TAIL: Final = """</main>
<footer>Made by sitemap-crawler {tool} &middot; sitemaps.org protocol 0.9</footer>
{data}<script>{js}</script>
</body>
</html>
"""

_BODY: Final = """<section class="summary" id="summary" aria-label="Summary">
<dl class="figures">{figures}</dl>
<div class="sev-cards">{severities}</div>
</section>
<section class="panel" aria-labelledby="chart-title">
<h2 id="chart-title">Findings per code</h2>
{chart}
</section>
<section class="panel" aria-labelledby="table-title">
<h2 id="table-title">Findings</h2>
<div class="filters">
<label class="search"><span>Filter</span>
<input id="filter-text" type="search" placeholder="Any text: URL, detail, sitemap, code"
 autocomplete="off"></label>
<label><span>Severity</span><select id="filter-severity"><option value="">all</option>
{severity_options}</select></label>
<label><span>Code</span><select id="filter-code"><option value="">all</option>
{code_options}</select></label>
<p class="shown" id="shown" aria-live="polite"></p>
</div>
<noscript><p class="empty">The table of findings needs JavaScript.</p></noscript>
<table id="findings">
<thead><tr>{headers}</tr></thead>
<tbody></tbody>
</table>
<p class="empty" id="no-match" hidden>No finding matches the filter.</p>
<button type="button" id="more" class="more" hidden></button>
</section>
"""

PAGE_CSS: Final = """
:root {
  --ink: #1d2330; --muted: #5b6475; --line: #e3e6ec; --bg: #f6f7f9; --card: #fff;
  --accent: #2f5bd3;
  --error: #b42318; --error-bg: #fdecea; --error-bar: #d92d20;
  --warning: #93370d; --warning-bg: #fef4e4; --warning-bar: #e58a00;
  --notice: #1d4f91; --notice-bg: #e8f1fc; --notice-bar: #3b7dd8;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial,
    sans-serif;
  color: var(--ink); background: var(--bg); line-height: 1.45;
}
* { box-sizing: border-box; }
[hidden] { display: none !important; }
body { margin: 0; font-size: 15px; }
code, .mono { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace;
  font-size: 0.92em; }
header { background: #172036; color: #fff; padding: 28px max(24px, calc(50% - 620px)) 24px; }
.kicker { margin: 0; text-transform: uppercase; letter-spacing: .08em; font-size: 12px;
  color: #aeb8cf; }
h1 { margin: 4px 0 6px; font-size: 24px; font-weight: 650; overflow-wrap: anywhere; }
.verdict { margin: 0; color: #d5dbe8; }
main { max-width: 1240px; margin: 0 auto; padding: 20px 24px 8px; }
h2 { font-size: 17px; margin: 0 0 14px; }
.summary { display: flex; flex-wrap: wrap; gap: 14px; margin-bottom: 18px; }
.figures { display: flex; flex-wrap: wrap; gap: 14px; margin: 0; flex: 1 1 420px; }
.figure, .sev-card { background: var(--card); border: 1px solid var(--line);
  border-radius: 10px; padding: 12px 16px; min-width: 120px; flex: 1 1 120px; }
.figure { min-width: max-content; }
.figure dt { color: var(--muted); font-size: 13px; }
.figure dd { margin: 2px 0 0; font-size: 21px; font-weight: 650;
  font-variant-numeric: tabular-nums; white-space: nowrap; }
.sev-cards { display: flex; gap: 14px; flex: 1 1 360px; }
.sev-card { font: inherit; text-align: left; cursor: pointer; display: flex;
  flex-direction: column; border-left-width: 5px; }
.sev-card:hover, .sev-card:focus-visible { outline: 2px solid var(--accent);
  outline-offset: 1px; }
.sev-n { font-size: 22px; font-weight: 650; font-variant-numeric: tabular-nums; }
.sev-name { font-size: 13px; color: var(--muted); }
.sev-card.sev-error { border-left-color: var(--error-bar); }
.sev-card.sev-error .sev-n { color: var(--error); }
.sev-card.sev-warning { border-left-color: var(--warning-bar); }
.sev-card.sev-warning .sev-n { color: var(--warning); }
.sev-card.sev-notice { border-left-color: var(--notice-bar); }
.sev-card.sev-notice .sev-n { color: var(--notice); }
.panel { background: var(--card); border: 1px solid var(--line); border-radius: 10px;
  padding: 18px 20px; margin-bottom: 18px; }
.chart { display: grid; gap: 2px; }
.bar-row { display: grid; grid-template-columns: minmax(180px, 34%) 1fr 64px; gap: 14px;
  align-items: center; font: inherit; color: inherit; text-align: left; background: none;
  border: 0; border-radius: 6px; padding: 3px 8px; cursor: pointer; }
.bar-row:hover, .bar-row:focus-visible { background: #f0f3f8; outline: none; }
.bar-label { display: flex; flex-direction: column; min-width: 0; }
.bar-label code { font-weight: 600; overflow-wrap: anywhere; }
.bar-text { font-size: 12.5px; color: var(--muted); }
.bar { width: 100%; height: 16px; display: block; }
.bar-count { text-align: right; font-variant-numeric: tabular-nums; font-weight: 600; }
.sev-error .bar rect { fill: var(--error-bar); }
.sev-warning .bar rect { fill: var(--warning-bar); }
.sev-notice .bar rect { fill: var(--notice-bar); }
.filters { display: flex; flex-wrap: wrap; gap: 10px 16px; align-items: flex-end;
  margin-bottom: 12px; }
.filters label { display: flex; flex-direction: column; font-size: 12.5px;
  color: var(--muted); gap: 3px; }
.filters .search { flex: 1 1 280px; }
.filters label:not(.search) { flex: 0 1 auto; min-width: 0; }
input, select { font: inherit; font-size: 14px; color: var(--ink); padding: 7px 10px;
  border: 1px solid #c9ced8; border-radius: 7px; background: #fff; min-width: 0; }
input:focus, select:focus { outline: 2px solid var(--accent); outline-offset: 0;
  border-color: var(--accent); }
.shown { margin: 0 0 8px auto; color: var(--muted); font-size: 13px; }
table { width: 100%; border-collapse: collapse; table-layout: fixed; font-size: 13.5px; }
th { text-align: left; border-bottom: 2px solid var(--line); padding: 0;
  position: sticky; top: 0; background: var(--card); z-index: 1; }
th button { font: inherit; font-weight: 600; color: var(--ink); background: none; border: 0;
  width: 100%; text-align: left; padding: 8px 8px; cursor: pointer; white-space: nowrap; }
th button:hover, th button:focus-visible { color: var(--accent); outline: none; }
.arrow { display: inline-block; width: 1em; margin-left: 4px; color: var(--accent); }
th[aria-sort="ascending"] .arrow::after { content: "\\25B2"; font-size: .75em; }
th[aria-sort="descending"] .arrow::after { content: "\\25BC"; font-size: .75em; }
td { padding: 8px; border-bottom: 1px solid var(--line); vertical-align: top;
  overflow-wrap: anywhere; word-break: break-word; }
tbody tr:hover { background: #f8f9fb; }
.col-severity { width: 96px; } .col-code { width: 190px; } .col-line { width: 64px; }
.col-sitemap { width: 15%; } .col-url { width: 33%; }
td.line { font-variant-numeric: tabular-nums; text-align: right; padding-right: 16px; }
td.url, td.sitemap { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace;
  font-size: 12.5px; }
td.url a { color: var(--accent); text-decoration: none; }
td.url a:hover { text-decoration: underline; }
.none { color: #98a0ae; }
.pill { display: inline-block; border-radius: 999px; padding: 1px 9px; font-size: 12px;
  font-weight: 600; }
.pill.sev-error { color: var(--error); background: var(--error-bg); }
.pill.sev-warning { color: var(--warning); background: var(--warning-bg); }
.pill.sev-notice { color: var(--notice); background: var(--notice-bg); }
.empty { color: var(--muted); }
.more { display: block; margin: 14px auto 2px; font: inherit; padding: 8px 18px;
  border-radius: 8px; border: 1px solid #c9ced8; background: #fff; cursor: pointer; }
.more:hover { border-color: var(--accent); color: var(--accent); }
footer { text-align: center; color: var(--muted); font-size: 12.5px; padding: 8px 0 28px; }
@media (max-width: 720px) {
  body { font-size: 14px; }
  header { padding: 20px 16px 18px; }
  h1 { font-size: 19px; }
  main { padding: 14px 12px 4px; }
  .panel { padding: 14px 12px; }
  .sev-cards { flex-basis: 100%; gap: 8px; }
  .figures { gap: 8px; }
  .figure, .sev-card { min-width: 0; flex-basis: 40%; padding: 10px 12px; }
  .figure dd, .sev-n { font-size: 19px; }
  .bar-row { grid-template-columns: 1fr 48px; gap: 4px 10px; }
  .bar-label { grid-column: 1 / -1; }
  .filters label:not(.search) { flex: 1 1 40%; }
  .filters select { width: 100%; }
  .shown { margin: 0; }
  table, tbody, tr, td { display: block; width: 100%; }
  table { table-layout: auto; }
  thead tr { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; }
  thead tr::before { content: "Sort by"; color: var(--muted); font-size: 12.5px; }
  th[class] { position: static; border: 0; width: auto; }
  th button { border: 1px solid var(--line); border-radius: 6px; padding: 4px 8px;
    font-size: 12.5px; }
  tbody tr { border: 1px solid var(--line); border-radius: 8px; margin: 10px 0;
    padding: 6px 10px; }
  td { border: 0; padding: 3px 0; display: grid; grid-template-columns: 70px 1fr;
    gap: 8px; justify-items: start; }
  td::before { content: attr(data-label); color: var(--muted); font-size: 12px;
    font-family: system-ui, sans-serif; padding-top: 1px; }
  td.line { text-align: left; }
}
"""

# Data reaches the DOM only through textContent, attribute values of an http(s) href, and
# <option> text: nothing from the site is ever parsed as HTML.
_JS: Final = r"""
"use strict";
(function () {
  var data = JSON.parse(document.getElementById("audit-data").textContent);
  var ORIGIN = data.origin, SEV = data.severities, CODES = data.codes, MAPS = data.sitemaps;
  var TEXT = {};
  CODES.forEach(function (c) { TEXT[c[0]] = c[2]; });
  var rows = data.findings.map(function (f, i) {
    var code = CODES[f[0]];
    return {i: i, code: code[0], sev: code[1], severity: SEV[code[1]],
            sitemap: f[1] === null ? "" : MAPS[f[1]], line: f[2],
            url: f[3] === null ? "" : f[3], detail: f[4], hay: null};
  });
  var table = document.getElementById("findings");
  var tbody = table.tBodies[0];
  var textBox = document.getElementById("filter-text");
  var sevBox = document.getElementById("filter-severity");
  var codeBox = document.getElementById("filter-code");
  var shown = document.getElementById("shown");
  var more = document.getElementById("more");
  var noMatch = document.getElementById("no-match");
  var LABELS = {severity: "Severity", code: "Code", url: "URL", sitemap: "Sitemap",
                line: "Line", detail: "Detail"};
  var sortKey = null, sortDir = 1, view = rows, drawn = 0;

  function compare(key, dir) {
    return function (a, b) {
      var x, y;
      if (key === "severity") { x = a.sev; y = b.sev; }
      else if (key === "line") {
        x = a.line; y = b.line;
        if (x === null || y === null) {  // no line: last, whichever the direction
          if (x !== y) return x === null ? 1 : -1;
          return a.i - b.i;
        }
      } else { x = a[key]; y = b[key]; }
      if (x < y) return -dir;
      if (x > y) return dir;
      return a.i - b.i;
    };
  }

  function haystack(r) {
    if (r.hay === null) {
      r.hay = [r.severity, r.code, r.url, r.sitemap, r.line === null ? "" : String(r.line),
               r.detail].join("\n").toLowerCase();
    }
    return r.hay;
  }

  function cell(tr, key, cls) {
    var td = document.createElement("td");
    td.className = cls || key;
    td.setAttribute("data-label", LABELS[key]);
    tr.appendChild(td);
    return td;
  }

  function none(td) {
    var span = document.createElement("span");
    span.className = "none";
    span.textContent = "\u2014";
    td.appendChild(span);
  }

  function row(r) {
    var tr = document.createElement("tr");
    var pill = document.createElement("span");
    pill.className = "pill sev-" + r.severity;
    pill.textContent = r.severity;
    cell(tr, "severity").appendChild(pill);
    var code = document.createElement("code");
    code.textContent = r.code;
    var td = cell(tr, "code");
    td.title = TEXT[r.code];
    td.appendChild(code);
    td = cell(tr, "url");
    if (!r.url) none(td);
    else if (/^https?:\/\//i.test(r.url)) {
      var a = document.createElement("a");
      a.href = r.url;
      a.rel = "noopener noreferrer nofollow";
      a.target = "_blank";
      a.textContent = r.url;
      td.appendChild(a);
    } else td.textContent = r.url;
    td = cell(tr, "sitemap");
    if (!r.sitemap) none(td);
    else {
      td.title = r.sitemap;
      td.textContent = ORIGIN && r.sitemap.indexOf(ORIGIN + "/") === 0 ?
        r.sitemap.slice(ORIGIN.length) : r.sitemap;
    }
    td = cell(tr, "line");
    if (r.line === null) none(td); else td.textContent = String(r.line);
    cell(tr, "detail").textContent = r.detail;
    return tr;
  }

  function draw(upto) {
    var frag = document.createDocumentFragment();
    for (; drawn < upto && drawn < view.length; drawn++) frag.appendChild(row(view[drawn]));
    tbody.appendChild(frag);
    var left = view.length - drawn;
    more.hidden = left <= 0;
    more.textContent = "Show " + Math.min(left, data.pageRows).toLocaleString("en") +
      " more (" + left.toLocaleString("en") + " not shown)";
    shown.textContent = "Showing " + drawn.toLocaleString("en") + " of " +
      view.length.toLocaleString("en") + (view.length === rows.length ? "" :
      " matching (" + rows.length.toLocaleString("en") + " in all)") + " findings";
    noMatch.hidden = view.length > 0 || rows.length === 0;
  }

  function update() {
    var text = textBox.value.trim().toLowerCase();
    var sev = sevBox.value, code = codeBox.value;
    view = rows.filter(function (r) {
      return (!sev || r.severity === sev) && (!code || r.code === code) &&
             (!text || haystack(r).indexOf(text) !== -1);
    });
    if (sortKey) view.sort(compare(sortKey, sortDir));
    tbody.textContent = "";
    drawn = 0;
    draw(data.pageRows);
  }

  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
    th.querySelector("button").addEventListener("click", function () {
      var key = th.getAttribute("data-key");
      sortDir = sortKey === key ? -sortDir : 1;
      sortKey = key;
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (other) {
        other.setAttribute("aria-sort", other === th ?
          (sortDir === 1 ? "ascending" : "descending") : "none");
      });
      update();
    });
  });
  textBox.addEventListener("input", update);
  sevBox.addEventListener("change", update);
  codeBox.addEventListener("change", update);
  more.addEventListener("click", function () { draw(drawn + data.pageRows); });

  function pick(select, value) {
    select.value = select.value === value ? "" : value;
    update();
    table.scrollIntoView({block: "start"});
  }
  Array.prototype.forEach.call(document.querySelectorAll(".bar-row"), function (b) {
    b.addEventListener("click", function () { pick(codeBox, b.getAttribute("data-code")); });
  });
  Array.prototype.forEach.call(document.querySelectorAll(".sev-card"), function (b) {
    b.addEventListener("click", function () {
      pick(sevBox, b.getAttribute("data-severity"));
    });
  });
  update();
})();
"""
