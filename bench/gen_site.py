"""Write a deterministic static site for the crawl benchmark, plus the URL list a crawl must find.

Run: python3 bench/gen_site.py --pages 20000 --out bench/.sites/s20k --seed 1

The site is shaped like a large CMS site so that a crawler spends its time where it would on a
real one: every page repeats the same header, nav and footer (about 40 links, all already seen
after the first page), then carries 10 to 60 in-content links in every form a crawler must
resolve (relative, ``../``, root-relative, absolute, protocol-relative, with fragments) and a
few it must drop (external hosts, ``mailto:``, bare fragments). About 5% of the pages sit under
prefixes that robots.txt disallows; they are linked to but never expected in a sitemap.

Reachability is guaranteed by construction rather than checked afterwards: the allowed pages
form an 8-ary tree rooted at the home page (each page links to its tree children), so every
allowed page is at most ``log8(N)`` clicks from ``/`` whatever the random links do. That keeps
generation linear and lets the expected list be written without a crawl.

Output layout (``--out DIR``)::

    DIR/www/            the document root to serve (index.html, robots.txt, s00/..., drafts/...)
    DIR/expected.txt    the absolute URLs a robots-obeying crawl must find, sorted, one a line
    DIR/site.json       the manifest: pages, seed, origin, page_kb, counts (what the bench reads)

Absolute links need the origin the site will be served on, so ``--origin`` is baked in and
recorded in the manifest; serve the site on that host and port.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

SECTIONS = 20
TREE_FANOUT = 8
NAV_LINKS = 40
DISALLOWED_SHARE = 0.05
DISALLOWED_PREFIXES = ("/drafts/", "/print/")
EXTERNAL_SITES = (
    "https://www.example.com/",
    "https://en.wikipedia.org/wiki/",
    "http://example.org/partners/",
    "https://cdn.example.net/assets/",
)
_PROSE = (
    "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut "
    "labore et dolore magna aliqua enim ad minim veniam quis nostrud exercitation ullamco laboris "
    "nisi aliquip ex ea commodo consequat duis aute irure in reprehenderit voluptate velit esse "
    "cillum fugiat nulla pariatur excepteur sint occaecat cupidatat non proident sunt culpa qui "
    "officia deserunt mollit anim id est laborum crawler sitemap index page section archive"
)
WORDS = tuple(_PROSE.split())
MANIFEST_VERSION = 1


@dataclass(slots=True, frozen=True)
class SiteSpec:
    pages: int
    seed: int
    origin: str
    page_kb: int
    media: bool = False  # images and hreflang alternates on every page (issue #15's bench)

    def manifest(self, allowed: int, disallowed: int, seconds: float) -> dict[str, object]:
        return {
            "version": MANIFEST_VERSION,
            "pages": self.pages,
            "seed": self.seed,
            "origin": self.origin,
            "page_kb": self.page_kb,
            "media": self.media,
            "expected": allowed,
            "disallowed": disallowed,
            "generated_in_s": round(seconds, 1),
        }


def page_paths(pages: int, rng: random.Random) -> tuple[list[str], list[int], list[int]]:
    """Every page's root-relative path, and the indices of allowed and disallowed pages.

    Page 0 is the home page and pages 1..SECTIONS are the section index pages; they and the nav
    targets are never disallowed, so the shared nav only ever points at listable pages.
    """
    fixed = min(pages, 1 + SECTIONS + NAV_LINKS)
    paths: list[str] = ["/"] * pages
    allowed: list[int] = []
    disallowed: list[int] = []
    for i in range(pages):
        if i == 0:
            allowed.append(i)
            continue
        if i <= SECTIONS:
            paths[i] = f"/s{i - 1:02d}/"
            allowed.append(i)
            continue
        section = i % SECTIONS
        if i >= fixed and rng.random() < DISALLOWED_SHARE:
            prefix = DISALLOWED_PREFIXES[i % len(DISALLOWED_PREFIXES)]
            paths[i] = f"{prefix}s{section:02d}/p{i}.html"
            disallowed.append(i)
        else:
            paths[i] = f"/s{section:02d}/p{i}.html"
            allowed.append(i)
    return paths, allowed, disallowed


def _folder(path: str) -> str:
    return path[: path.rfind("/") + 1]


def link_form(src: str, dst: str, origin: str, roll: float) -> str:
    """dst written the way roll picks: relative, root-relative, absolute or protocol-relative.

    Relative forms are computed against src's folder, so they exercise ``../`` resolution.
    """
    if roll < 0.35:
        src_dir, dst_dir = _folder(src), _folder(dst)
        name = dst[len(dst_dir) :]
        if src_dir == dst_dir:
            return name or "./"
        up = src_dir.count("/") - 1
        return "../" * up + dst[1:] if dst != "/" else "../" * up or "./"
    if roll < 0.75:
        return dst
    if roll < 0.92:
        return origin + dst
    return "//" + origin.split("://", 1)[1] + dst


def filler(rng: random.Random, count: int) -> list[str]:
    """Paragraphs of plausible prose, about 600 bytes each, reused across pages."""
    paragraphs = []
    for _ in range(count):
        words = [rng.choice(WORDS) for _ in range(rng.randint(70, 110))]
        paragraphs.append(" ".join(words).capitalize() + ".")
    return paragraphs


def shared_chrome(paths: list[str], origin: str) -> tuple[str, str]:
    """The header+nav and the footer every page repeats: NAV_LINKS root-relative links."""
    nav_targets = list(range(min(len(paths), NAV_LINKS)))
    half = len(nav_targets) * 3 // 4
    head_links = "".join(
        f'<li><a href="{paths[i]}">{"Home" if i == 0 else f"Section {i}"}</a></li>'
        for i in nav_targets[:half]
    )
    foot_links = "".join(f'<li><a href="{paths[i]}">Page {i}</a></li>' for i in nav_targets[half:])
    header = (
        '<header class="site-header"><a class="logo" href="/">Bench Site</a>'
        f'<form action="/search"><input name="q"></form><nav><ul>{head_links}</ul></nav>'
        '<a class="skip" href="#content">Skip to content</a></header>'
    )
    footer = (
        f'<footer class="site-footer"><ul>{foot_links}</ul>'
        '<p><a href="mailto:webmaster@example.com">Contact</a> '
        f'<a href="{origin}/">{origin}</a></p></footer>'
    )
    return header, footer


def render(
    i: int,
    paths: list[str],
    allowed: list[int],
    disallowed: list[int],
    tree_children: list[int],
    chrome: tuple[str, str],
    paragraphs: list[str],
    spec: SiteSpec,
    rng: random.Random,
    position: dict[int, int] | None = None,
) -> bytes:
    """One page's HTML; its size falls between page_kb and 2 * page_kb kilobytes."""
    src = paths[i]
    origin = spec.origin
    targets = list(tree_children)
    wanted = rng.randint(10, 60)
    while len(targets) < wanted:
        pool = disallowed if disallowed and rng.random() < 0.05 else allowed
        targets.append(pool[rng.randrange(len(pool))])
    rng.shuffle(targets)
    links = []
    for t in targets:
        href = link_form(src, paths[t], origin, rng.random())
        if rng.random() < 0.05:
            href += "#details"
        links.append(f'<a href="{href}">Page {t}</a>')
    for _ in range(rng.randint(1, 3)):
        site = EXTERNAL_SITES[rng.randrange(len(EXTERNAL_SITES))]
        links.append(f'<a href="{site}item-{rng.randrange(1000)}">elsewhere</a>')
    links.append('<a href="#top">Back to top</a>')
    if rng.random() < 0.5:
        links.append(f'<a href="mailto:author{i % 97}@example.com">Write to the author</a>')

    target_size = rng.randint(spec.page_kb * 1024, spec.page_kb * 2048)
    header, footer = chrome
    head, figures = media(i, paths, allowed, position, spec) if position else ("", "")
    parts = [
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Page {i}</title>'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<link rel="stylesheet" href="/static/site.css">{head}</head><body>',
        header,
        f'<main id="content"><article><h1 id="top">Page {i}</h1>{figures}',
    ]
    size = sum(map(len, parts)) + len(footer) + 40
    size += sum(map(len, links)) + 8 * len(links)
    per_para = 3
    k = 0
    while k < len(links) or size < target_size:
        para = paragraphs[rng.randrange(len(paragraphs))]
        chunk = " ".join(links[k : k + per_para])
        k += per_para
        if size >= target_size:
            parts.append(f"<p>{chunk}</p>")
        else:
            parts.append(f"<p>{para} {chunk}</p>")
            size += len(para) + 8
    parts.append("</article></main>")
    parts.append(footer)
    parts.append("</body></html>\n")
    return "".join(parts).encode()


def media(
    i: int, paths: list[str], allowed: list[int], position: dict[int, int], spec: SiteSpec
) -> tuple[str, str]:
    """With --media: the head's og:image and hreflang alternates (the page as en and
    x-default, a partner page as de, which names it back: complete two-page clusters), and
    the body's images: a logo, 8 content images (every third with a srcset), a picture
    with two sources. Derived from i alone, so the random stream (and every other byte of
    the page) is that of the site without --media."""
    origin = spec.origin
    src = paths[i]
    k = position.get(i, -1)
    head = f'<meta property="og:image" content="{origin}/img/og/{i}.jpg">'
    if k >= 0:
        partner = paths[allowed[k ^ 1]] if (k ^ 1) < len(allowed) else src
        en, de = (src, partner) if k % 2 == 0 else (partner, src)
        head += (
            f'<link rel="alternate" hreflang="en" href="{origin}{en}">'
            f'<link rel="alternate" hreflang="de" href="{origin}{de}">'
            f'<link rel="alternate" hreflang="x-default" href="{origin}{en}">'
        )
    figures = ['<img src="/img/logo.svg" alt="logo">']
    for n in range(8):
        name = f"/img/{i % 500}/{n}.jpg"
        srcset = f' srcset="{name}?w=480 480w, {name}?w=1200 1200w"' if n % 3 == 0 else ""
        figures.append(f'<img src="{name}"{srcset} alt="figure {n}" width="640" height="480">')
    figures.append(
        f'<picture><source srcset="/img/{i}/hero.avif 1x, /img/{i}/hero@2x.avif 2x">'
        f'<source srcset="/img/{i}/hero.webp 800w, /img/{i}/hero-big.webp 1600w">'
        f'<img src="/img/{i}/hero.jpg" alt="hero"></picture>'
    )
    figures.append('<img src="/pixel.gif" width="1" height="1" alt="">')
    return head, "".join(figures)


def robots_txt(origin: str) -> str:
    rules = "".join(f"Disallow: {p}\n" for p in DISALLOWED_PREFIXES)
    return (
        "# Bench site: the drafts and print views are not for crawlers.\n"
        f"User-agent: *\n{rules}Allow: /\n\nSitemap: {origin}/sitemap.xml\n"
    )


def generate(spec: SiteSpec, out: Path) -> dict[str, object]:
    """Write the site under out/www, expected.txt and site.json; return the manifest."""
    started = time.perf_counter()
    rng = random.Random(spec.seed)
    paths, allowed, disallowed = page_paths(spec.pages, rng)
    www = out / "www"
    for d in {_folder(p) for p in paths}:
        (www / d.lstrip("/")).mkdir(parents=True, exist_ok=True)
    chrome = shared_chrome(paths, spec.origin)
    paragraphs = filler(rng, 64)
    children: dict[int, list[int]] = {}
    for k in range(1, len(allowed)):  # allowed[k]'s tree parent is allowed[(k - 1) // fanout]
        children.setdefault(allowed[(k - 1) // TREE_FANOUT], []).append(allowed[k])
    www_str = str(www)
    empty: list[int] = []
    position = {page: k for k, page in enumerate(allowed)} if spec.media else None
    for i in range(spec.pages):
        html = render(
            i,
            paths,
            allowed,
            disallowed,
            children.get(i, empty),
            chrome,
            paragraphs,
            spec,
            rng,
            position,
        )
        path = paths[i]
        file = www_str + (path + "index.html" if path.endswith("/") else path)
        fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, html)
        finally:
            os.close(fd)
    (www / "robots.txt").write_text(robots_txt(spec.origin))
    (www / "static").mkdir(exist_ok=True)  # every page links the stylesheet; it must not 404
    (www / "static" / "site.css").write_text("body{font-family:sans-serif;max-width:60em}\n")
    expected = sorted(spec.origin + paths[i] for i in allowed)
    (out / "expected.txt").write_text("\n".join(expected) + "\n")
    manifest = spec.manifest(len(allowed), len(disallowed), time.perf_counter() - started)
    (out / "site.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def read_manifest(out: Path) -> dict[str, object] | None:
    """The manifest of a site already generated in out, or None."""
    try:
        return json.loads((out / "site.json").read_text())
    except (OSError, ValueError):
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, required=True, help="pages to write (>= 1)")
    parser.add_argument("--out", type=Path, required=True, help="folder to write the site to")
    parser.add_argument("--seed", type=int, default=1, help="same seed, same site")
    parser.add_argument(
        "--origin",
        default="http://127.0.0.1:8765",
        help="scheme://host:port the site will be served on (absolute links use it)",
    )
    parser.add_argument(
        "--page-kb", type=int, default=15, help="pages are page-kb to 2*page-kb KB (default 15)"
    )
    parser.add_argument(
        "--media",
        action="store_true",
        help="also images (img, srcset, picture, og:image) and hreflang alternates on every page",
    )
    args = parser.parse_args(argv)
    if args.pages < 1 or args.page_kb < 1:
        parser.error("--pages and --page-kb must be at least 1")
    spec = SiteSpec(args.pages, args.seed, args.origin.rstrip("/"), args.page_kb, args.media)
    manifest = generate(spec, args.out)
    print(json.dumps(manifest), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
