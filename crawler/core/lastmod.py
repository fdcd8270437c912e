"""Honest lastmods: which date a page's <lastmod> gives, and where it comes from. Pure.

Many sites send no ``Last-Modified`` (most CMS and app pages), or stamp every response with the
time of the request; their sitemaps then have no lastmod, or one that changes every night,
which search engines learn to ignore. So a crawl that keeps a history (``--state``) dates a
page by its *content*: the start of the run in which the page's content fingerprint last
changed.

The fingerprint ignores the template, as search engines ask ("minor changes of templates
affecting a bunch of pages are no reason to submit all pages as modified"): it is made of the
text blocks of the page's main content (crawler.core.extract.content_blocks), minus the
blocks that repeat on most pages of the site. Which blocks those are is known only once the
whole site is crawled, and it may change from one run to the next (a block crossing half the
pages). So a page's blocks are kept one by one (32-bit hashes), and a page's old and new
blocks are compared after removing from BOTH the blocks common now or in the previous run:
a block that became common (or stopped being so) then moves no page's lastmod, and neither
does a footer year changed on every page (the old year was common, the new one is).

What a lastmod means (this module is its one owner; the shell only feeds it facts): once a
page has a published lastmod and a history, its lastmod stays as it was until that
fingerprint changes, whatever its Last-Modified or ETag do (a site rebuild moves every one
of them, and would otherwise announce every page as changed); then it moves to the page's
Last-Modified when that is believable and later than the old lastmod, else to the start of
the run that saw the change. A page whose main text is not compared (no content blocks: a
PDF or another listed non-HTML type, an HTML page without main text, or blocks seen by one
run only) keeps its published lastmod as well, unless its Last-Modified is believable, not
the response's Date, and later. So a heuristic (whether the site's headers are believable)
only ever decides a page without a published lastmod, and no lastmod disappears from one
night to the next because it changed its mind. `header` is the raw header, always, as
documented.

When the template is counted (#26). The count (count_candidates: a pass over every listing
of the night) is taken only when something depends on it. A page's lastmod does only when
both runs have its blocks and their packings differ (needs_template): the same packing is
the same content whatever the template. The next run's template is this run's, which the
count makes of the night's pages with blocks (one packing each); when each of them has
the blocks its history row holds, byte for byte, and they are exactly the pages the last
run counted (their URL ids, kept with the history: NightTemplate), the count would be
over the last run's packings, and its template is kept instead of counted again. On a
site of more than SAMPLE_ALL listings the candidates are a sample taken in the order the
pages arrive, so two counts of the same packings can differ in the blocks on more than
half of the pages but not of the pages fed (which no arrival order guarantees); the
kept template is the one the last run's order made.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from itertools import chain, islice
from typing import Final

__all__ = [
    "AUTO",
    "CONTENT",
    "HEADER",
    "MODES",
    "NONE",
    "SOURCES",
    "Blocks",
    "Dated",
    "HeavyHitters",
    "LastRun",
    "NightTemplate",
    "SiteDates",
    "choose",
    "common_blocks",
    "content_date",
    "count_candidates",
    "date_page",
    "has_bit",
    "id_bits",
    "needs_template",
    "pack_blocks",
    "same_content",
    "set_bit",
    "stamped",
    "unpack_blocks",
]

AUTO: Final = "auto"
HEADER: Final = "header"
CONTENT: Final = "content"
NONE: Final = "none"
#: A lastmod's sources (a published lastmod is stored with its source)
SOURCES: Final = (HEADER, CONTENT, NONE)
#: The `lastmod` setting's values: AUTO, or one source for every page.
MODES: Final = (AUTO, *SOURCES)

#: Blocks kept per page: 4 bytes each, stored per URL in the state file (crawler.core.extract
#: cuts a page's content blocks to it).
MAX_BLOCKS: Final = 2048

#: A block is template when it is on more than this share of the listed pages ("most").
COMMON_SHARE: Final = 0.5
#: Counters of the heavy-hitters summary. Misra-Gries keeps every item seen more than
#: n/(K+1) times in a stream of n items; a page feeds at most MAX_BLOCKS distinct blocks,
#: so n <= MAX_BLOCKS * pages, and K = 2 * MAX_BLOCKS keeps every block on more than half
#: the pages fed, whatever the pages hold. (About 300 KB of dict, whatever the site's size.)
SUMMARY_SIZE: Final = 2 * MAX_BLOCKS
#: Pages fed to the summary: every page up to this many, then one in SAMPLE_EVERY (a block
#: on half the pages is on about half of any large sample; the count that decides is exact).
SAMPLE_ALL: Final = 4096
SAMPLE_EVERY: Final = 8
#: Seconds between a Last-Modified and the response's Date that still count as "equal".
STAMP_SLACK: Final = 2.0

Blocks = array  # array("I"): a page's block hashes


def unpack_blocks(packed: bytes | None) -> Blocks:
    blocks = array("I")
    if packed:
        blocks.frombytes(packed)
    return blocks


def pack_blocks(blocks: Iterable[int]) -> bytes:
    return array("I", blocks).tobytes()


class HeavyHitters:
    """Misra-Gries summary of the blocks of the pages fed to it: bounded memory (SUMMARY_SIZE
    counters) on a site of millions of pages, and every block on more than half of the fed
    pages is among its candidates (see SUMMARY_SIZE). The exact count of the candidates is
    taken afterwards on a pass over the listings (common_blocks)."""

    __slots__ = ("_counts", "_seen", "_size")

    def __init__(self, size: int = SUMMARY_SIZE) -> None:
        self._size = size
        self._counts: Counter[int] = Counter()
        self._seen = 0  # pages offered, fed or not

    def add_page(self, packed: bytes | None) -> None:
        """One listed page's blocks (each distinct block counts once per page)."""
        if self.offered() and packed:
            self.feed(packed)

    def offered(self) -> bool:
        """A listed page is offered, in the order they arrive: whether it is one of the pages
        fed (SAMPLE_ALL, SAMPLE_EVERY), now (add_page) or later (feed)."""
        self._seen = seen = self._seen + 1
        return seen <= SAMPLE_ALL or not seen % SAMPLE_EVERY

    def feed(self, packed: bytes) -> None:
        """The blocks of a page that offered() chose. Fed in another order than offered
        (journal.Dating feeds them at the count, in loc order, on a night it may skip the
        count), the counters can differ from add_page's, but not the guarantee, which holds
        for the pages fed in any order: the candidates can differ only in blocks on at most
        half of the pages fed, and the exact count decides on every page alike."""
        counts, size = self._counts, self._size
        blocks = set(unpack_blocks(packed))
        if len(counts) + len(blocks) <= size:  # room for every new block: none is dropped,
            counts.update(blocks)  # so each counts one more, in C (the usual case)
            return
        for block in blocks:
            if block in counts:
                counts[block] += 1
            elif len(counts) < size:
                counts[block] = 1
            else:  # every counter loses one, the new block with them (kept in order)
                counts = Counter({key: n - 1 for key, n in counts.items() if n > 1})
        self._counts = counts

    def candidates(self) -> frozenset[int]:
        return frozenset(self._counts)


#: Pages whose blocks count_candidates holds at once (a few hundred KB at most).
_COUNT_CHUNK: Final = 1024


def count_candidates(
    candidates: frozenset[int], packed: Iterable[bytes | None], chunk: int = _COUNT_CHUNK
) -> tuple[dict[int, int], int]:
    """The exact count of the candidates (HeavyHitters.candidates): on how many of the
    pages (their packed blocks) each is, each distinct block once a page; and how many
    pages have blocks. Candidates on no page are left out (common_blocks needs two). The
    blocks found are counted by Counter's loop in C, a chunk of pages at a time: this pass
    runs over every listing of the crawl, and a Python step per block found was a tenth of
    it."""
    counts: Counter[int] = Counter()
    pages = 0
    present = filter(None, packed)
    while held := list(islice(present, chunk)):
        pages += len(held)
        if candidates:
            found = map(candidates.intersection, map(unpack_blocks, held))
            counts.update(chain.from_iterable(found))
    return counts, pages


def common_blocks(counts: dict[int, int], pages: int) -> frozenset[int]:
    """The blocks on most pages (more than COMMON_SHARE of `pages`, and two at least), from
    the exact count of each candidate."""
    floor = max(2, int(pages * COMMON_SHARE) + 1)
    return frozenset(block for block, count in counts.items() if count >= floor)


def same_content(old: bytes | None, new: bytes | None, template: frozenset[int]) -> bool:
    """Whether two packings of a page's blocks say the same, once the template is left out
    of both (see the module doc: the template of this run and of the previous one)."""
    if old == new:
        return True
    kept_old = [b for b in unpack_blocks(old) if b not in template]
    kept_new = [b for b in unpack_blocks(new) if b not in template]
    return kept_old == kept_new


def needs_template(before: bytes | None, blocks: bytes | None) -> bool:
    """Whether a page's lastmod can depend on the template (date_page, content_date): only
    when both runs have its blocks and their packings differ (see same_content)."""
    return before is not None and blocks is not None and before != blocks


def set_bit(bits: bytearray, n: int) -> None:
    """Bit n (an id, never negative) of a bitmap of ids: an eighth of a byte an id up to
    the largest (4 bytes a page as an array, and no sort: at 1M pages a sorted list of the
    ids was 38 MB at its peak). URL ids grow with every link target ever met, so the bitmap
    is sized by them; it is the smaller while one id in 32 is a page counted."""
    at = n >> 3
    if at >= len(bits):
        bits.extend(bytes(at + 1 - len(bits)))
    bits[at] |= 1 << (n & 7)


def has_bit(bits: bytes | bytearray, n: int) -> bool:
    at = n >> 3
    return 0 <= at < len(bits) and bool(bits[at] >> (n & 7) & 1)


def id_bits(ids: Iterable[int]) -> bytes:
    """The ids as NightTemplate.counted packs them."""
    bits = bytearray()
    for n in ids:
        set_bit(bits, n)
    return bytes(bits)


class NightTemplate:
    """What decides whether a run's template is the last run's without counting it (see
    the module doc): every listed page of the run (a twin that loses too: the count takes
    every listing) is given with the blocks its history row holds. Held: the URL ids of the
    pages with blocks (a bitmap), and whether all of them had their row's blocks."""

    __slots__ = ("_as_before", "_ids")

    def __init__(self) -> None:
        self._ids = bytearray()
        self._as_before = True

    def page(self, uid: int | None, blocks: bytes | None, before: bytes | None) -> bool:
        """A listed page (`uid`: its URL's id, None if it has none), its blocks and its
        history row's (None without a row); whether its lastmod needs the template
        (needs_template). Pages without blocks are not counted (count_candidates), nor
        held here."""
        if blocks:
            if uid is not None:
                set_bit(self._ids, uid)
            if uid is None or blocks != before:
                self._as_before = False
        return needs_template(before, blocks)

    def counted(self) -> bytes:
        """The ids of the pages with blocks, a bitmap (id_bits): kept with the history, the
        next run's `counted_before`."""
        return bytes(self._ids)

    def kept(self, counted_before: bytes | None) -> bool:
        """Whether the last run's template is this run's: each page with the blocks of its
        row, and the pages those the last run counted (`counted_before`, None when not
        known: then it is counted)."""
        return self._as_before and counted_before is not None and self._ids == counted_before


def stamped(last_modified: datetime | None, date: datetime | None) -> bool:
    """Whether a Last-Modified is the response's own Date: a server stamping every answer
    with the time of the request, whose header says nothing of the page."""
    if last_modified is None or date is None:
        return False
    return abs((last_modified - date).total_seconds()) <= STAMP_SLACK


@dataclass(slots=True)
class SiteDates:
    """What the crawl learnt of the site's Last-Modified headers, for `auto`."""

    with_header: int = 0  # listed pages sending a usable Last-Modified
    stamped: int = 0  # of which the header was the response's Date

    def add(self, has_header: bool, is_stamped: bool) -> None:
        if has_header:
            self.with_header += 1
            if is_stamped:
                self.stamped += 1

    @property
    def believable(self) -> bool:
        """The headers can be believed unless most of them are the time of the request."""
        return not (self.with_header and self.stamped * 2 > self.with_header)


def choose(
    mode: str, header: int | None, content: int | None, believable: bool
) -> tuple[int | None, str]:
    """The lastmod of a page (microseconds since the epoch, or None) and its source:
    HEADER, CONTENT or NONE. `header`: its Last-Modified (None when missing or in the
    future); `content`: the start of the run in which its content was seen to change (None
    until a run sees it differ from the last: when it changed before is not known)."""
    if mode == HEADER or (mode == AUTO and believable and header is not None):
        return (header, HEADER) if header is not None else (None, NONE)
    if mode in (CONTENT, AUTO):
        if content is not None:
            return content, CONTENT
        if mode == CONTENT and believable and header is not None:  # first sight
            return header, HEADER
    return None, NONE


def content_date(
    before: bytes | None,
    changed: int | None,
    blocks: bytes | None,
    template: frozenset[int],
    started: int,
) -> int | None:
    """A page's content date (microseconds): `changed`, the last run's, while its blocks say
    the same as `before` once `template` is left out; `started`, the start of this run, once
    they differ. None when either run has no blocks (first sight, or not an HTML page): when
    its text last changed is not known until a run sees it differ."""
    if before is None or blocks is None:
        return None
    return changed if same_content(before, blocks, template) else started


@dataclass(slots=True)
class LastRun:
    """What the last finished run kept of a listed page (the state's history). Not frozen,
    as Dated: one of each is made for every listing at the publish, and a frozen class's
    __init__ (an object.__setattr__ call a field) costs several times a plain one's."""

    blocks: bytes | None = None  # its content blocks, packed
    changed: int | None = None  # its content date
    lastmod: int | None = None  # the lastmod it was published with
    source: str | None = None  # and that lastmod's source


@dataclass(slots=True)
class Dated:
    """A listed page's date: the lastmod published (microseconds, or None) and its source,
    and the content date the history keeps for the next run."""

    lastmod: int | None
    source: str
    changed: int | None


def date_page(
    mode: str,
    *,
    header: int | None,
    stamped: bool,
    blocks: bytes | None,
    before: LastRun | None,
    template: frozenset[int],
    believable: bool,
    started: int,
) -> Dated:
    """The lastmod of a listed page (see the module doc). `header`: its Last-Modified (None
    when missing or in the future); `stamped`: that header was its response's Date;
    `blocks`: its content blocks (a 304's are the history's); `before`: the last finished
    run's row, None without a history; `template`: the blocks common now or in the last run;
    `believable`: the site's headers are (SiteDates); `started`: this run's start."""
    kept = before.lastmod if before is not None and before.source in (HEADER, CONTENT) else None
    kept_source = before.source if before is not None and before.source else CONTENT
    if mode in (HEADER, NONE):
        changed = (
            None if before is None
            else content_date(before.blocks, before.changed, blocks, template, started)
        )  # fmt: skip
        lastmod, source = choose(mode, header, changed, believable)
        return Dated(lastmod, source, changed)
    if before is None or before.blocks is None or blocks is None:
        # its main text not seen by both runs (no blocks: a PDF, an image, a page without
        # main text): when it last changed is not known, so a published lastmod stays
        # unless its own header, believed, says later; never back to None
        if kept is None:
            lastmod, source = choose(mode, header, None, believable)
            return Dated(lastmod, source, None)
        if header is not None and believable and not stamped and header > kept:
            return Dated(header, HEADER, None)
        return Dated(kept, kept_source, None)
    moved = not same_content(before.blocks, blocks, template)
    changed = started if moved else before.changed
    if kept is None:
        lastmod, source = choose(mode, header, changed, believable)
        return Dated(lastmod, source, changed)
    if not moved:  # the same main text: the lastmod it has, whatever its headers say
        return Dated(kept, kept_source, changed)
    if header is not None and believable and not stamped and header > kept:
        return Dated(header, HEADER, changed)
    return Dated(started, CONTENT, changed)
