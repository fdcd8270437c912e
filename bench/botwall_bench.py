"""What the bot-wall check (crawler/core/botwall.py) costs per page on the crawl's hot path:
a 200 answer (nearly every page), a site's own 404, and a challenge page. Prints µs per
call; the answers' headers are aiohttp's own type, as the transport hands them over.

    .venv/bin/python bench/botwall_bench.py
"""

from __future__ import annotations

import timeit

from multidict import CIMultiDict, CIMultiDictProxy

from crawler.core.botwall import bot_wall


def _headers(**values: str) -> CIMultiDictProxy[str]:
    base = {
        "Content-Type": "text/html; charset=utf-8",
        "Date": "Thu, 26 Nov 2026 12:00:00 GMT",
        "Server": "nginx",
        "Last-Modified": "Thu, 26 Nov 2026 11:00:00 GMT",
        "ETag": '"abc"',
        "Cache-Control": "max-age=60",
        "Vary": "Accept-Encoding",
    }
    return CIMultiDictProxy(CIMultiDict({**base, **values}))


def main() -> None:
    page = b"<!doctype html><html><head><title>t</title></head><body>" + b"".join(
        b'<p><a href="/p/%d">link %d</a> some words of the page %d.</p>\n' % (i, i, i)
        for i in range(400)
    )  # about 23 KB, as the bench site's pages
    cases = {
        "200 page": (200, _headers(), page),
        "404 page": (404, _headers(), page),
        "403 page (8 KiB scanned)": (403, _headers(), page),
        "Cloudflare challenge (header)": (
            403,
            _headers(**{"cf-mitigated": "challenge", "CF-RAY": "1-LHR"}),
            page,
        ),
        "Imperva 200 (8 KiB scanned)": (200, _headers(**{"X-Iinfo": "5-1-0 NNNN"}), page),
    }
    for name, (status, headers, body) in cases.items():
        calls = 200_000 if status == 200 and "X-Iinfo" not in headers else 20_000
        seconds = min(
            timeit.repeat(
                lambda s=status, h=headers, b=body: bot_wall(s, h, b), number=calls, repeat=5
            )
        )
        print(f"{name:32} {seconds / calls * 1e6:7.3f} µs per answer")


if __name__ == "__main__":
    main()
