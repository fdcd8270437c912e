"""The set published before this run, read back from ``out_dir`` for a stable layout.

What search engines saw is the truth to keep stable, so the previous assignment of URLs to
part files is read from the published files themselves (the manifest, the index and its
parts, read with our own bounded reader), not from a crawl's state file: it works with or
without ``--state``. Memory stays flat on millions of URLs: each part (at most 50,000 URLs)
is read, sorted by loc and written to a scratch file in the staging folder, and the writer
merges those sorted files (``heapq.merge``) against its own sorted input, so no dict of
every old loc is ever built.
"""

from __future__ import annotations

import gzip as gziplib
import hashlib
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import Final

from sitemap_out.groups import DEFAULT_GROUP, PART_RE
from sitemap_out.limits import MAX_BYTES
from sitemap_out.manifest import read_layout, read_manifest
from sitemap_out.scratch import CHUNK, read_chunks
from sitemap_out.xml import SITEMAP_NS, unescape

__all__ = ["OldPart", "PreviousSet", "old_locs", "part_digest", "read_layout", "read_previous"]

_NEWS_RE: Final = re.compile(r"sitemap-news\.xml(?:\.gz)?")
_CHUNK: Final = 1 << 16
_SPACE: Final = re.compile(r"\s")


@dataclass(frozen=True, slots=True)
class OldPart:
    """One published part: its number (1 for a single-file sitemap), file name, URL count,
    the SHA-256 of its uncompressed bytes, its ``<lastmod>`` in the index as written (None
    for a single file or none given), the scratch file of its ``[loc, lastmod]`` lines and
    the group its name gives (``sitemap_out.groups``)."""

    number: int
    name: str
    url_count: int
    digest: bytes
    index_lastmod: str | None
    locs: Path
    group: str = DEFAULT_GROUP


@dataclass(frozen=True, slots=True)
class PreviousSet:
    """``parts`` hold every URL the published set lists (for the changes); ``reusable``
    says whether its layout can be kept (same settings), and ``note`` why not, when not."""

    parts: tuple[OldPart, ...]
    reusable: bool
    note: str
    index: bool = False  # published as a sitemap index (then a stable layout keeps one)

    def of_group(self, group: str) -> PreviousSet:
        """The parts of one group: what its own stable layout keeps."""
        return PreviousSet(
            tuple(p for p in self.parts if p.group == group), self.reusable, self.note, self.index
        )


def read_previous(out_dir: Path, scratch: Path, layout: dict[str, object]) -> PreviousSet:
    """Read what is published in out_dir. A set that is missing or unreadable counts as
    empty (every URL is then added), with a note saying why; a readable set made with other
    settings (``layout``: base URL, format, gzip, limits) gives its URLs for the changes
    but not its layout."""
    names = read_manifest(out_dir)
    if not names:
        return PreviousSet((), False, "")
    entry = next((n for n in ("sitemap.xml", "sitemap.txt") if n in names), None)
    if entry is None:
        return PreviousSet((), False, "")
    recorded = read_layout(out_dir)
    # A single file is read as a part is (one pass, the checks the layout needs), not
    # first by the validating reader as well: on a site of one file, that second reading
    # of every URL was most of the publish's cost. Only an index goes to the reader.
    try:
        single = _read_part(out_dir / entry, xml=".xml" in entry)
    except _NotUrlset:
        single = None
    except _Unreadable as exc:
        return _unreadable(f"{entry}: {exc}")
    except (OSError, EOFError, zlib.error, gziplib.BadGzipFile) as exc:
        return _unreadable(f"{entry}: {getattr(exc, 'strerror', None) or exc}")
    if single is not None:
        part = _scratch(scratch, DEFAULT_GROUP, 1, entry, None, *single)
        return _previous([part], recorded, layout, index=False)
    from sitemap_out.reader import read_sitemap  # an index: not loaded for a single file

    try:
        top = read_sitemap(out_dir / entry)
    except OSError as exc:
        return _unreadable(f"{entry}: {exc.strerror or exc}")
    if not top.ok:
        return _unreadable(f"{entry}: {top.problems[0].message}")
    # the index names its parts under the base URL it was made with
    base = (recorded or layout).get("base_url")
    found: list[tuple[str, int, str, str | None]] = []
    if top.kind == "sitemapindex":
        for item in top.entries:
            name = item.loc.removeprefix(base) if isinstance(base, str) else item.loc
            if _NEWS_RE.fullmatch(name) and item.loc.startswith(str(base)):
                continue  # the news sitemap: written afresh every run, not a part
            match = PART_RE.fullmatch(name)
            if not isinstance(base, str) or not item.loc.startswith(base) or match is None:
                return _unreadable(f"{entry} lists {item.loc[:200]}, not a part of this set")
            group = match["group"] or DEFAULT_GROUP
            found.append((group, int(match["number"]), name, item.lastmod))
    else:
        found.append((DEFAULT_GROUP, 1, entry, None))
    parts: list[OldPart] = []
    numbers: set[tuple[str, int]] = set()
    for group, number, name, index_lastmod in found:
        if (group, number) in numbers:
            return _unreadable(f"{entry} lists part {name} twice")
        numbers.add((group, number))
        try:
            rows, digest = _read_part(out_dir / name, xml=".xml" in name)
        except _Unreadable as exc:
            return _unreadable(f"{name}: {exc}")
        except (OSError, EOFError, zlib.error, gziplib.BadGzipFile) as exc:
            return _unreadable(f"{name}: {getattr(exc, 'strerror', None) or exc}")
        parts.append(_scratch(scratch, group, number, name, index_lastmod, rows, digest))
    return _previous(parts, recorded, layout, index=top.kind == "sitemapindex")


def _scratch(
    scratch: Path,
    group: str,
    number: int,
    name: str,
    index_lastmod: str | None,
    rows: list[tuple[str, str | None]],
    digest: bytes,
) -> OldPart:
    """The part, its rows sorted by loc into a scratch file (see the module doc)."""
    rows.sort()
    locs = scratch / f"old-{group}-{number}.locs"
    with open(locs, "w", encoding="utf-8") as fh:
        fh.writelines(
            f"{loc}\n" if lastmod is None else f"{loc}\t{lastmod}\n" for loc, lastmod in rows
        )
    return OldPart(number, name, len(rows), digest, index_lastmod, locs, group)


def _previous(
    parts: list[OldPart],
    recorded: dict[str, object] | None,
    layout: dict[str, object],
    *,
    index: bool,
) -> PreviousSet:
    parts.sort(key=lambda p: (p.group, p.number))
    if recorded != layout:
        what = _what_differs(recorded, layout)
        return PreviousSet(tuple(parts), False, f"{what}: a fresh layout of part files")
    return PreviousSet(tuple(parts), True, "", index=index)


class _Unreadable(Exception):
    pass


class _NotUrlset(_Unreadable):
    """The file's root is not a urlset: a part so made is unreadable; a sitemap.xml so
    made may be an index, which the validating reader reads."""


def _read_part(path: Path, *, xml: bool) -> tuple[list[tuple[str, str | None]], bytes]:
    """The (loc, lastmod) of one part we published, and the SHA-256 of its uncompressed
    bytes, in one pass. Faster than the validating reader (a third of the time: no check
    but what the layout needs) and as safe: bounded to MAX_BYTES uncompressed, no DTD, no
    entity expansion. A urlset read as text (or the reverse) is unreadable, as are
    duplicate locs and locs or lastmods holding whitespace.

    A part exactly as our writer makes it (a line per URL, see _OWN_URL) is read a line at
    a time by a regular expression: an eighth of lxml's time a URL, and most of reading
    the set back on a night when nothing changed. Any other file, or any line not of that
    shape, is read again from its start by lxml, so both readings give the same rows."""
    own = _read_own(path) if xml else None
    if own is None:
        return _checked_lxml(path, xml=xml)
    rows, digest = own
    if not rows:
        raise _Unreadable("it lists no URL")
    if len(set(map(itemgetter(0), rows))) != len(rows):
        raise _Unreadable("a URL is listed twice")
    return rows, digest


#: Printable ASCII but `<`, `&` and `>` (so no `]]>` either), or one of the five entities
#: xml.escape writes: text that is well-formed as it stands and holds no character reference.
_TEXT: Final = r"[!-%'-;=?-~]*(?:&(?:amp|lt|gt|quot|apos);[!-%'-;=?-~]*)*"
#: The start of a part as xml.urlset_open writes it without extension namespaces (those
#: parts, with image, video, news or xhtml tags, are lxml's), a stylesheet line or not.
_OWN_HEAD: Final = re.compile(
    rb'<\?xml version="1\.0" encoding="UTF-8"\?>\n'
    rb'(?:<\?xml-stylesheet type="text/xsl" href="[!#-%\'-;=?-~]*"\?>\n)?'
    rb'<urlset xmlns="http://www\.sitemaps\.org/schemas/sitemap/0\.9">\n'
)


#: One <url> line as xml.url_element writes it without extensions, from the start of a line
#: to its end: the sitemaps.org children in the schema's order, each optional one once, the
#: loc and the lastmod taken, neither empty (our writer writes no empty lastmod: a part with
#: one is lxml's to read). Nothing in it matches a line's end but its last character, so a
#: match is one whole line.
_OWN_URL: Final = re.compile(
    rf"^<url><loc>((?=[^<]){_TEXT})</loc>(?:<lastmod>((?=[^<]){_TEXT})</lastmod>)?"
    r"(?:<changefreq>[a-z]+</changefreq>)?(?:<priority>[0-9.]+</priority>)?</url>\n",
    re.MULTILINE,
)
_OWN_END: Final = b"</urlset>\n"


def _read_own(path: Path) -> tuple[list[tuple[str, str | None]], bytes] | None:
    """The rows and digest of a part of our own shape (see _read_part), read a block of
    whole lines at a time: each block's values taken by one regular expression in C, a
    match a line (_OWN_URL), and the block ours when it has as many matches as lines (one
    pass: a second, which checked the block first, and a decoding of each value were half
    the reading, #26). None at the first block that is not of that shape (the caller then
    reads the file with lxml); _Unreadable for a file over MAX_BYTES, as lxml's reading
    would say. Every row has a loc, and neither holds whitespace: _OWN_URL admits none."""
    sha = hashlib.sha256()
    rows: list[tuple[str, str | None]] = []
    pending = b""
    head = ended = False
    for chunk in _uncompressed(path, sha.update):
        if ended:
            return None
        pending += chunk
        if not head:  # the first chunk holds it: a few hundred bytes of _CHUNK's
            found = _OWN_HEAD.match(pending)
            if found is None:
                return None
            pending = pending[found.end() :]
            head = True
        cut = pending.rfind(b"\n") + 1
        block, pending = pending[:cut], pending[cut:]
        if block.endswith(_OWN_END):
            block, ended = block[: -len(_OWN_END)], True
            if block and not block.endswith(b"\n"):  # `</urlset>` after text on its line
                return None
        try:
            lines = block.decode("ascii")
        except UnicodeDecodeError:
            return None
        values: list[tuple[str, str]] = _OWN_URL.findall(lines)
        if len(values) != lines.count("\n"):
            return None
        if "&" in lines:
            rows += ((unescape(loc), unescape(lm) if lm else None) for loc, lm in values)
        elif lines.count("<lastmod>") == len(values):  # every one dated: the rows as taken
            rows += values
        else:
            rows += ((loc, lm or None) for loc, lm in values)
    if not ended or pending:
        return None
    return rows, sha.digest()


def part_digest(path: Path) -> bytes | None:
    """The SHA-256 of a part file's uncompressed bytes, as read_previous takes it (the
    digest a part published is known by); None when it cannot be read as a part."""
    sha = hashlib.sha256()
    try:
        for _ in _uncompressed(path, sha.update):
            pass
    except (_Unreadable, OSError, EOFError, zlib.error, gziplib.BadGzipFile):
        return None
    return sha.digest()


def _uncompressed(path: Path, update: Callable[[bytes], object]) -> Iterator[bytes]:
    """The file's bytes, gunzipped when gzipped, _CHUNK at a time, each given to update (the
    digest) first; _Unreadable once past MAX_BYTES."""
    size = 0
    with open(path, "rb") as raw:
        gz = raw.read(2) == b"\x1f\x8b"
        raw.seek(0)
        source = gziplib.GzipFile(fileobj=raw, mode="rb") if gz else raw
        while chunk := source.read(_CHUNK):
            size += len(chunk)
            if size > MAX_BYTES:
                raise _Unreadable("larger than a sitemap may be")
            update(chunk)
            yield chunk


def _checked_lxml(path: Path, *, xml: bool) -> tuple[list[tuple[str, str | None]], bytes]:
    """_read_part for any file: lxml's pull parser (or lines, for a text part). lxml is
    loaded here: a crawl reading back only parts of its own shape never needs it."""
    from lxml import etree

    sha = hashlib.sha256()
    rows: list[tuple[str, str | None]] = []
    parser = etree.XMLPullParser(
        events=("start", "end"),
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        huge_tree=False,
    )
    url_tag, loc_tag, lastmod_tag = (f"{{{SITEMAP_NS}}}{t}" for t in ("url", "loc", "lastmod"))
    depth = 0
    pending = b""
    for chunk in _uncompressed(path, sha.update):
        if not xml:
            *lines, pending = (pending + chunk).split(b"\n")
            rows += ((line.decode(), None) for line in lines if line.strip())
            continue
        try:
            parser.feed(chunk)
            for event, elem in parser.read_events():
                if event == "start":
                    depth += 1
                    if depth == 1 and elem.tag != f"{{{SITEMAP_NS}}}urlset":
                        raise _NotUrlset(f"the root element is {elem.tag}, not a urlset")
                    if depth == 1 and elem.getroottree().docinfo.doctype:
                        raise _Unreadable("it has a DOCTYPE, which we never write")
                    continue
                depth -= 1
                if depth == 1 and elem.tag == url_tag:
                    rows.append((elem.findtext(loc_tag) or "", elem.findtext(lastmod_tag)))
                    elem.clear(keep_tail=False)
                    while elem.getprevious() is not None:
                        del elem.getparent()[0]
        except etree.XMLSyntaxError as exc:
            raise _Unreadable(f"not well-formed XML: {exc.msg}") from None
    if xml:
        try:
            parser.close()
        except etree.XMLSyntaxError as exc:
            raise _Unreadable(f"not well-formed XML: {exc.msg}") from None
    elif pending.strip():
        rows.append((pending.decode(), None))
    return _checked(rows), sha.digest()


def _checked(rows: list[tuple[str, str | None]]) -> list[tuple[str, str | None]]:
    """The rows, unless the layout cannot use them: none, an empty loc, whitespace in a loc
    or lastmod, a URL listed twice (_Unreadable)."""
    if not rows:
        raise _Unreadable("it lists no URL")
    seen: set[str] = set()
    for loc, lastmod in rows:
        if not loc or _SPACE.search(loc) or (lastmod is not None and _SPACE.search(lastmod)):
            raise _Unreadable(f"a loc or lastmod is empty or holds whitespace: {loc[:200]!r}")
        seen.add(loc)
    if len(seen) != len(rows):
        raise _Unreadable("a URL is listed twice")
    return rows


def _what_differs(old: dict[str, object] | None, new: dict[str, object]) -> str:
    if old is None:
        return "the published sitemap does not record its settings (an older version made it)"
    keys = [k for k in sorted({*old, *new}) if old.get(k) != new.get(k)]
    return "the published sitemap was made with another " + ", ".join(keys)


def _unreadable(why: str) -> PreviousSet:
    return PreviousSet(
        (), False, f"the published sitemap cannot be read back ({why}): a fresh layout, "
        "and every URL counts as added"
    )  # fmt: skip


def old_locs(
    part: OldPart, key: int, chunk_size: int = CHUNK
) -> Iterator[tuple[str, str | None, int]]:
    """(loc, lastmod as written, key) of one old part, in loc order (``key``: which part,
    for the caller); the file is read a chunk at a time without holding it open (a merge
    of thousands of parts)."""
    number = key
    pending = b""
    for chunk in read_chunks(part.locs, chunk_size):
        # the whole lines decoded at once (a decoding a line was a tenth of a comparison,
        # #26): cut at a line's end, no UTF-8 sequence is cut
        pending += chunk
        cut = pending.rfind(b"\n") + 1
        lines, pending = pending[:cut].decode().split("\n"), pending[cut:]
        lines.pop()  # ("" after the last line's end)
        for line in lines:
            loc, tab, lastmod = line.partition("\t")
            yield loc, lastmod if tab else None, number
