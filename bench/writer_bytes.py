"""The bytes sitemap_out's writer publishes, as one SHA-256 per file per step. Prints them.

    python3 bench/writer_bytes.py > mine.txt
    PYTHONPATH=/path/to/other/checkout python3 bench/writer_bytes.py > theirs.txt
    diff mine.txt theirs.txt

A restructure of the writer must publish the same bytes: run this on both checkouts and
compare. The steps cover a single file, rollover on URL count and on bytes, gzip, the text
format, every extension, the news sitemap, and five nights of a stable layout with the feed
(fresh, unchanged, lastmods moved, grown and shrunk, then other limits: a fresh layout).
Every run is given its time, so the output does not depend on the clock.
"""

from __future__ import annotations

import hashlib
import sys
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sitemap_out import Alternate, Entry, SitemapWriter
from sitemap_out.entry import News, Video

BASE = "https://example.com/"
DAY = datetime(2026, 3, 1, 6, 0, tzinfo=UTC)


def plain(count: int, tag: str = "p") -> Iterator[Entry]:
    for i in range(count):
        yield Entry(f"{BASE}{tag}/{i:06d}?a=1&b='{i}'", lastmod=DAY - timedelta(hours=i % 50))


def rich(count: int) -> Iterator[Entry]:
    news = News("Example", "en", DAY, "A & B")
    for i in range(count):
        loc = f"{BASE}r/{i:05d}"
        yield Entry(
            loc,
            lastmod=(DAY - timedelta(days=i % 9)).date() if i % 3 else None,
            changefreq="daily" if i % 2 else None,
            priority=0.5 if i % 4 == 0 else None,
            images=tuple(f"{loc}/img{k}.png" for k in range(i % 3)),
            alternates=(Alternate("de", loc + "?hl=de"), Alternate("en", loc))
            if i % 5 == 0
            else (),
            videos=(Video(loc + "/t.jpg", "T", "D", content_loc=loc + "/v.mp4"),)
            if i % 7 == 0
            else (),
            news=news if i % 11 == 0 else None,
        )


def night(count: int, n: int) -> list[Entry]:
    """A site on night n: unchanged on night 2, then some lastmods move, then some URLs go
    and others come (each in a range of the parts, so that the other parts are kept)."""
    out = []
    for i in range(count):
        if n >= 4 and i % 17 == 0 and 700 < i < 1400:
            continue
        lastmod = DAY + timedelta(days=1 if n >= 3 and i % 13 == 0 and i < 500 else 0)
        out.append(Entry(f"{BASE}s/{i:06d}", lastmod=lastmod))
        if n >= 4 and i % 29 == 0 and i > 1500:
            out.append(Entry(f"{BASE}s/{i:06d}-new", lastmod=DAY + timedelta(days=n)))
    return sorted(out, key=lambda e: e.loc)


def show(step: str, folder: Path) -> None:
    for path in sorted(folder.iterdir()):
        if path.is_file() and path.name != ".sitemap.lock":
            print(step, path.name, hashlib.sha256(path.read_bytes()).hexdigest())


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="writer-bytes-") as tmp:
        root = Path(tmp)
        steps: list[tuple[str, dict[str, object], list[Entry], list[Entry]]] = [
            ("single", {}, list(plain(50)), []),
            ("by-count", {"max_urls": 700}, list(plain(2500)), []),
            ("by-bytes", {"max_bytes": 40_000}, list(plain(2500)), []),
            ("gzip", {"gzip": True, "max_urls": 1000}, list(plain(2500)), []),
            ("gzip1", {"gzip": True, "compresslevel": 1}, list(plain(300)), []),
            ("txt", {"fmt": "txt"}, list(plain(300)), []),
            ("txt-split", {"fmt": "txt", "gzip": True, "max_urls": 100}, list(plain(300)), []),
            ("rich", {"max_bytes": 30_000}, list(rich(400)), []),
            ("news", {"max_urls": 100}, list(rich(400)), [e for e in rich(400) if e.news]),
        ]
        for name, kw, entries, news in steps:
            out = root / name
            with SitemapWriter(out, BASE, now=DAY, **kw) as w:  # type: ignore[arg-type]
                w.add_many(entries)
                for entry in news:
                    w.add_news(entry)
                result = w.publish()
            print(name, [p.name for p in result.files], result.news, *result.parts)
            show(name, out)
        for gz in (False, True):
            out = root / f"stable-gzip-{gz}"
            for n in (1, 2, 3, 4, 5):
                kw = {"max_urls": 300 if n < 5 else 250, "gzip": gz, "feed_days": 7}
                with SitemapWriter(out, BASE, stable=True, now=DAY + timedelta(days=n), **kw) as w:  # type: ignore[arg-type]
                    w.add_many(night(2000, n))
                    if n == 3:
                        w.add_news(next(e for e in rich(1) if e.news))
                    result = w.publish()
                print(f"stable-{gz}-{n}", result.changes, result.news, *result.parts)
                show(f"stable-{gz}-{n}", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
