"""The audit's HTML report (`audit --html FILE`): a pure page, then the page in a real browser.

The pure tests read the page with lxml: the figures, every finding (from the page's JSON, the
only place the findings are), the escaping of hostile input, no external resource, the same
bytes for the same input, and a size that grows linearly with the findings. The browser test
opens the page from a file:// URL in Debian's headless chromium (tests/browser.py) and
sorts, filters and reads the table as a user would.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import lxml.html
import pytest

from crawler.core.audit_html import PAGE_ROWS, render_html
from crawler.core.findings import CODES, AuditSummary, Finding, ordered
from crawler.shell import eventloop
from tests import browser
from tests.browser import Chromium

SITE = "https://www.example-shop.com"
HOSTILE = [
    "<script>window.__pwned = 1; alert(1)</script>",
    '</script><img src=x onerror="window.__pwned = 2">',
    "\"'><svg onload=window.__pwned=3>",
    "&lt;b&gt; \u2028\u2029 <!-- <script>",
    "javascript:window.__pwned=4",
]


def sample() -> tuple[AuditSummary, list[Finding]]:
    """A realistic audit: 40 findings of 13 codes, two sitemaps of an index, long URLs."""
    products = f"{SITE}/sitemaps/products-2.xml.gz"
    pages = f"{SITE}/sitemaps/pages.xml"
    long = (
        f"{SITE}/catalogue/outdoor-and-garden/furniture/teak-folding-chairs-set-of-four"
        "-with-cushions-weatherproof?colour=natural&size=large&utm_source=newsletter"
        "&utm_campaign=spring-sale-2024-final-reminder"
    )
    f: list[Finding] = [
        Finding("sitemap_unreachable", f"{SITE}/sitemaps/archive-2019.xml", None, "status 404"),
        Finding(
            "wrong_namespace", pages, None, "root in http://www.google.com/schemas/sitemap/0.84", 2
        ),
        Finding(
            "not_in_robots_txt",
            f"{SITE}/sitemap_index.xml",
            None,
            "robots.txt names no Sitemap: line for this index",
        ),
    ]
    for i in range(7):
        f.append(
            Finding(
                "http_error",
                products,
                f"{SITE}/product/{1000 + i}-discontinued-item-{'x' * (i * 6)}",
                f"status {404 if i % 3 else 410}",
                12 + i * 7,
            )
        )
    for i in range(6):
        f.append(
            Finding(
                "redirect",
                pages,
                f"{SITE}/old/page-{i}.html",
                f"301 to {SITE}/new/page-{i}/",
                40 + i * 5,
            )
        )
    for i in range(4):
        f.append(
            Finding(
                "noindex", products, f"{long}&page={i}", "robots meta: noindex, follow", 200 + i
            )
        )
    for i in range(5):
        f.append(
            Finding(
                "canonicalised",
                products,
                f"{SITE}/product/{i}?ref=home",
                f"canonical: {SITE}/product/{i}",
                300 + i * 4,
            )
        )
    f += [
        Finding(
            "blocked_by_robots",
            pages,
            f"{SITE}/account/wishlist",
            "Disallow: /account/ (robots.txt line 7)",
            88,
        ),
        Finding("blocked_by_robots", pages, f"{SITE}/cart", "Disallow: /cart (line 8)", 91),
        Finding("invalid_date", pages, f"{SITE}/about", "lastmod '2024-13-45' is no W3C date", 17),
        Finding("invalid_url", pages, "/relative/path with spaces", "not an absolute URL", 21),
        Finding(
            "lastmod_in_future",
            products,
            f"{SITE}/product/77",
            "lastmod 2031-01-01 is after now, 2024-05-02",
            512,
        ),
        Finding(
            "not_a_page",
            products,
            f"{SITE}/media/catalogue-2024-spring-summer.zip",
            "content type application/zip",
            640,
        ),
        Finding("duplicate_url", products, f"{SITE}/product/12", "also at line 14", 19),
        Finding("duplicate_url", pages, f"{SITE}/contact", "also at line 3", 9),
        Finding("orphan", None, f"{SITE}/landing/summer-campaign", "no crawled page links here"),
        Finding("orphan", None, f"{SITE}/landing/winter-campaign", "no crawled page links here"),
        Finding("orphan", None, f"{SITE}/landing/autumn-campaign", "no crawled page links here"),
        Finding("invalid_date", products, f"{SITE}/product/9", "lastmod 'yesterday'", 33),
        Finding(
            "missing_from_sitemap",
            None,
            f"{SITE}/blog/how-to-care-for-teak-furniture",
            "listed by the crawl, in no sitemap",
        ),
        Finding(
            "missing_from_sitemap", None, f"{SITE}/blog/", "listed by the crawl, in no sitemap"
        ),
        Finding(
            "lastmod_newer_than_page",
            products,
            f"{SITE}/product/5",
            "lastmod 2024-04-30 vs Last-Modified 2023-11-02",
            57,
        ),
    ]
    summary = AuditSummary(
        target=f"{SITE}/", sitemaps_read=4, urls_listed=12840, urls_checked=12838, seconds=83.4
    )
    summary.count(f)
    return summary, f


def hostile() -> tuple[AuditSummary, list[Finding]]:
    findings = [
        Finding("http_error", h, f"{SITE}/{h}", h, i + 1) for i, h in enumerate(HOSTILE)
    ] + [Finding("redirect", None, h, f"to {h}") for h in HOSTILE]
    summary = AuditSummary(target=f"{SITE}/?q=</title><script>window.__pwned=9</script>")
    summary.count(findings)
    return summary, findings


def page_data(page: str) -> dict:
    """The findings as the page's script reads them, decoded as the browser would."""
    tree = lxml.html.document_fromstring(page)
    (script,) = tree.xpath('//script[@type="application/json"]')
    return json.loads(script.text)


def rows_of(data: dict) -> list[tuple]:
    """(code, sitemap, line, url, detail) per finding, as the page holds them."""
    return [
        (data["codes"][c][0], None if s is None else data["sitemaps"][s], line, url, detail)
        for c, s, line, url, detail in data["findings"]
    ]


# -- the page as text ---------------------------------------------------------------------------


def test_the_sample_is_realistic() -> None:
    findings = sample()[1]
    assert len(findings) == 40 and len(Counter(f.code for f in findings)) == 16


def test_page_parses_and_shows_the_summary_and_every_finding() -> None:
    summary, findings = sample()
    page = render_html(summary, findings)
    tree = lxml.html.document_fromstring(page)
    text = tree.text_content()
    assert tree.findtext(".//title") == f"Sitemap audit: {SITE}/"
    assert tree.get_element_by_id("target").text_content() == f"{SITE}/"
    for figure in ("4", "12,840", "12,838", "1 min 23 s"):
        assert figure in text
    by_sev = summary.by_severity()
    cards = {
        b.get("data-severity"): b.find_class("sev-n")[0].text_content()
        for b in tree.find_class("sev-card")
    }
    assert cards == {sev: str(n) for sev, n in by_sev.items()}
    # the chart: a bar per code, worst first, labelled with the code, its text and its count
    bars = tree.find_class("bar-row")
    worst_first = sorted(
        summary.counts,
        key=lambda c: (
            ("error", "warning", "notice").index(CODES[c].severity),
            list(CODES).index(c),
        ),
    )
    assert [b.get("data-code") for b in bars] == worst_first
    assert len(bars) == len(summary.counts) == 16
    for bar in bars:
        code = bar.get("data-code")
        assert bar.find_class("bar-count")[0].text_content() == str(summary.counts[code])
        assert CODES[code].text in bar.text_content()
        assert bar.xpath(".//svg/rect") and CODES[code].text in bar.xpath(".//svg/title")[0].text
    # every finding, worst first, as given
    data = page_data(page)
    expected = [(f.code, f.sitemap, f.line, f.url, f.detail) for f in ordered(findings)]
    assert rows_of(data) == expected
    codes = [o.get("value") for o in tree.get_element_by_id("filter-code").findall("option")]
    assert codes == ["", *worst_first]


def test_hostile_input_is_escaped_and_kept_as_text() -> None:
    summary, findings = hostile()
    page = render_html(summary, findings)
    # nothing from the site can close the data's <script> or open a tag
    assert page.count("</script>") == 2  # the data's and the code's own
    assert "<img" not in page and "<svg onload" not in page and "\u2028" not in page
    lowered = page.lower()
    assert lowered.count("<script") == 2
    tree = lxml.html.document_fromstring(page)
    assert len(tree.xpath("//script")) == 2 and not tree.xpath("//img")
    assert not tree.xpath("//@onerror | //@onload")
    assert tree.get_element_by_id("target").text_content() == summary.target
    assert "window.__pwned=9" in tree.findtext(".//title")
    data = page_data(page)
    assert rows_of(data) == [
        (f.code, f.sitemap, f.line, f.url, f.detail) for f in ordered(findings)
    ]


def test_no_external_resource() -> None:
    summary, findings = sample()
    page = render_html(summary, findings)
    tree = lxml.html.document_fromstring(page)
    # the finding URLs live in the JSON only; the markup refers to nothing outside the file
    for attribute in tree.xpath(
        "//@src | //@href | //@action | //@srcset | //@xlink:href",
        namespaces={"xlink": "http://www.w3.org/1999/xlink"},
    ):
        assert not re.match(r"\s*(https?:)?//", attribute), attribute
    assert not tree.xpath("//link | //iframe | //object | //embed | //img | //script[@src]")
    styles = " ".join(s.text for s in tree.xpath("//style"))
    assert "@import" not in styles and "url(" not in styles


def test_the_same_input_gives_the_same_bytes() -> None:
    summary, findings = sample()
    first = render_html(summary, findings)
    assert render_html(*sample()) == first
    assert render_html(summary, list(reversed(findings))) == first  # the order is the page's


def test_no_findings() -> None:
    page = render_html(AuditSummary(target="/tmp/sitemap.xml", sitemaps_read=1), [])
    tree = lxml.html.document_fromstring(page)
    assert "No findings" in tree.text_content()
    assert page_data(page)["findings"] == []


def test_the_page_grows_linearly_with_the_findings() -> None:
    """100,000 findings: the page is 10 times the size of 10,000 (give or take the fixed
    part), and the data is written once per finding: no quadratic blow-up anywhere."""

    def page_for(n: int) -> str:
        findings = [
            Finding(
                code,
                f"{SITE}/sitemaps/part-{i % 40}.xml",
                f"{SITE}/catalogue/item-{i:06d}/" + "long-slug-" * 6,
                f"status {400 + i % 100}",
                i % 50_000 + 1,
            )
            for i, code in zip(range(n), list(CODES) * (n // len(CODES) + 1), strict=False)
        ]
        summary = AuditSummary(target=f"{SITE}/", urls_listed=n, urls_checked=n)
        summary.count(findings)
        return render_html(summary, findings)

    small, big = len(page_for(10_000)), len(page_for(100_000))
    fixed = len(page_for(0))
    ratio = (big - fixed) / (small - fixed)
    assert 9.5 < ratio < 10.5, ratio
    assert big / 100_000 < 200  # bytes per finding: the compact arrays, sitemaps once


# -- the page in a browser ----------------------------------------------------------------------

CELLS = "[...document.querySelectorAll('#findings tbody tr')].map(tr => tr.cells[{}].textContent)"
COLUMN = {"severity": 0, "code": 1, "url": 2, "sitemap": 3, "line": 4, "detail": 5}


def cells(column: str) -> str:
    return CELLS.format(COLUMN[column])


def test_the_page_in_chromium(tmp_path: Path) -> None:
    summary, findings = sample()
    report = tmp_path / "audit report.html"  # a space: the file:// URL is quoted
    report.write_text(render_html(summary, findings), encoding="utf-8")
    evil = tmp_path / "hostile.html"
    evil.write_text(render_html(*hostile()), encoding="utf-8")
    big = tmp_path / "big.html"
    many = [
        Finding("http_error", f"{SITE}/s.xml", f"{SITE}/p/{i}", f"status {400 + i % 100}", i + 1)
        for i in range(PAGE_ROWS * 3 + 7)
    ]
    big_summary = AuditSummary(target=SITE)
    big_summary.count(many)
    big.write_text(render_html(big_summary, many), encoding="utf-8")
    eventloop.run(_drive(tmp_path, report, evil, big, summary, findings))


async def _drive(
    tmp_path: Path,
    report: Path,
    evil: Path,
    big: Path,
    summary: AuditSummary,
    findings: list[Finding],
) -> None:
    async with Chromium(tmp_path) as browser:
        page = await browser.page()
        await page.goto(report.as_uri())
        n = len(findings)

        # the summary and the table, every row drawn
        assert await page.evaluate("document.getElementById('target').textContent") == (
            summary.target
        )
        assert await page.evaluate("document.querySelectorAll('.bar-row svg rect').length") == 16
        assert await page.evaluate("document.querySelectorAll('#findings tbody tr').length") == n
        assert await page.evaluate("document.getElementById('shown').textContent") == (
            f"Showing {n} of {n} findings"
        )
        worst_first = [f.code for f in ordered(findings)]
        assert await page.evaluate(cells("code")) == worst_first
        await page.screenshot(tmp_path / "report-1280.png")

        # a click on a header sorts by it; a second click reverses
        await page.click('th[data-key="url"] button')
        urls = await page.evaluate(cells("url"))
        listed = ["\u2014" if f.url is None else f.url for f in findings]
        # no URL sorts as "" (first when ascending); JS compares by UTF-16 code units, as
        # Python does for these ASCII URLs
        ascending = sorted(listed, key=lambda u: "" if u == "\u2014" else u)
        assert urls == ascending
        assert (
            await page.evaluate(
                "document.querySelector('th[data-key=url]').getAttribute('aria-sort')"
            )
            == "ascending"
        )
        await page.click('th[data-key="url"] button')
        urls_down = await page.evaluate(cells("url"))
        assert [u for u in urls_down if u != "\u2014"] == [
            u for u in reversed(ascending) if u != "\u2014"
        ]
        assert (
            await page.evaluate(
                "document.querySelector('th[data-key=url]').getAttribute('aria-sort')"
            )
            == "descending"
        )

        # line sorts as numbers (9 before 12 before 200), rows without a line last both ways
        await page.click('th[data-key="line"] button')
        lines = await page.evaluate(cells("line"))
        numbers = sorted(f.line for f in findings if f.line is not None)
        assert lines == [str(x) for x in numbers] + ["\u2014"] * (n - len(numbers))
        await page.click('th[data-key="line"] button')
        lines = await page.evaluate(cells("line"))
        assert lines == [str(x) for x in reversed(numbers)] + ["\u2014"] * (n - len(numbers))

        # severity sorts by rank, not by name
        await page.click('th[data-key="severity"] button')
        sevs = await page.evaluate(cells("severity"))
        rank = ("error", "warning", "notice")
        assert sevs == sorted(sevs, key=rank.index) and sevs[0] == "error"
        await page.click('th[data-key="severity"] button')
        assert await page.evaluate(cells("severity")) == sorted(sevs, key=rank.index, reverse=True)

        # the filters: text in any column, then severity, then code, combined
        await page.type_into("#filter-text", "PRODUCTS-2")
        in_products = [f for f in findings if f.sitemap and "products-2" in f.sitemap]
        assert await page.evaluate("document.querySelectorAll('#findings tbody tr').length") == len(
            in_products
        )
        await page.evaluate(
            "const s = document.getElementById('filter-severity'); s.value = 'warning';"
            "s.dispatchEvent(new Event('change'))"
        )
        warnings = [f for f in in_products if f.severity == "warning"]
        assert sorted(await page.evaluate(cells("code"))) == sorted(f.code for f in warnings)
        assert await page.evaluate("document.getElementById('shown').textContent") == (
            f"Showing {len(warnings)} of {len(warnings)} matching ({n} in all) findings"
        )
        await page.evaluate(
            "document.getElementById('filter-text').value = '';"
            "document.getElementById('filter-text').dispatchEvent(new Event('input'));"
            "document.getElementById('filter-severity').value = '';"
            "const c = document.getElementById('filter-code'); c.value = 'redirect';"
            "c.dispatchEvent(new Event('change'))"
        )
        assert await page.evaluate(cells("code")) == ["redirect"] * 6
        # a click on a bar of the chart picks its code; a second click clears it
        await page.click('.bar-row[data-code="noindex"]')
        assert await page.evaluate(cells("code")) == ["noindex"] * 4
        await page.click('.bar-row[data-code="noindex"]')
        assert await page.evaluate("document.querySelectorAll('#findings tbody tr').length") == n

        await page.set_viewport(400, 800)
        await page.screenshot(tmp_path / "report-400.png")
        # narrow: the table becomes cards, each no wider than the window
        assert await page.evaluate("document.documentElement.scrollWidth") <= 400
        assert page.errors == []

        # hostile input: nothing ran, everything shows as text
        await page.set_viewport(1280, 900)
        await page.goto(evil.as_uri())
        assert await page.evaluate("typeof window.__pwned") == "undefined"
        assert await page.evaluate("document.querySelectorAll('img, svg[onload]').length") == 0
        # only http(s) URLs become links: a javascript: URL stays text
        assert await page.evaluate("document.querySelectorAll('#findings a').length") == len(
            HOSTILE
        )
        assert await page.evaluate(
            "[...document.querySelectorAll('#findings a')].every(a => /^https:/.test(a.href))"
        )
        await page.click("#findings a")  # a new tab at most: nothing runs in this one
        details = await page.evaluate(cells("detail"))
        for h in HOSTILE:
            assert h in details
        assert HOSTILE[0] in await page.evaluate(cells("url"))
        await page.screenshot(tmp_path / "hostile.png")
        assert page.errors == []

        # a big report draws a page of rows at a time; sorting covers all of them
        await page.goto(big.as_uri())
        count = "document.querySelectorAll('#findings tbody tr').length"
        assert await page.evaluate(count) == PAGE_ROWS
        await page.click("#more")
        assert await page.evaluate(count) == 2 * PAGE_ROWS
        await page.click('th[data-key="line"] button')
        await page.click('th[data-key="line"] button')
        assert await page.evaluate(count) == PAGE_ROWS
        assert (await page.evaluate(cells("line")))[0] == str(PAGE_ROWS * 3 + 7)
        assert page.errors == []


def test_a_missing_chromium_skips_outside_ci_and_fails_in_ci(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(browser.shutil, "which", lambda name: None)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no chromium"):
        browser.chromium_or_skip()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"\.ci/run installs what the tests need"):
        browser.chromium_or_skip()
