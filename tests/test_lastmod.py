"""The pure rules of honest lastmods (crawler.core.lastmod)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from crawler.core.lastmod import (
    AUTO,
    CONTENT,
    HEADER,
    NONE,
    Dated,
    HeavyHitters,
    LastRun,
    NightTemplate,
    SiteDates,
    choose,
    common_blocks,
    content_date,
    count_candidates,
    date_page,
    id_bits,
    needs_template,
    pack_blocks,
    same_content,
    stamped,
)


def test_choose_by_mode():
    believable, not_believable = True, False
    assert choose(AUTO, 10, 20, believable) == (10, HEADER)
    assert choose(AUTO, 10, 20, not_believable) == (20, CONTENT)
    assert choose(AUTO, None, 20, believable) == (20, CONTENT)
    assert choose(AUTO, None, None, believable) == (None, NONE)  # first sight, no header
    assert choose(AUTO, 10, None, not_believable) == (None, NONE)
    assert choose(HEADER, 10, 20, not_believable) == (10, HEADER)  # as asked
    assert choose(HEADER, None, 20, believable) == (None, NONE)
    assert choose(CONTENT, 10, 20, believable) == (20, CONTENT)
    assert choose(CONTENT, 10, None, believable) == (10, HEADER)  # first sight: the header
    assert choose(CONTENT, 10, None, not_believable) == (None, NONE)
    assert choose(NONE, 10, 20, believable) == (None, NONE)


def test_a_site_stamping_every_answer_is_not_believed():
    site = SiteDates()
    assert site.believable
    for is_stamped in (True, True, False):
        site.add(True, is_stamped)
    site.add(False, False)  # no header: not counted
    assert not site.believable
    site.add(True, False)
    assert site.believable  # 2 of 4: not most


def test_stamped_is_the_date_header_give_or_take_two_seconds():
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert stamped(now, now + timedelta(seconds=1))
    assert not stamped(now - timedelta(days=3), now)
    assert not stamped(None, now) and not stamped(now, None)


def test_same_content_leaves_the_template_out_of_both():
    footer_2025, footer_2026, nav, text, edited = 1, 2, 3, 4, 5
    old = pack_blocks([nav, text, footer_2025])
    assert same_content(old, pack_blocks([nav, text, footer_2026]), frozenset({1, 2, 3}))
    assert not same_content(old, pack_blocks([nav, edited, footer_2026]), frozenset({1, 2, 3}))
    assert not same_content(old, pack_blocks([nav, text, footer_2026]), frozenset({3}))
    assert same_content(None, None, frozenset())
    assert not same_content(None, pack_blocks([text]), frozenset())


def test_common_blocks_are_on_more_than_half_of_the_pages():
    assert common_blocks({1: 6, 2: 5, 3: 1}, 10) == frozenset({1})
    assert common_blocks({1: 1}, 1) == frozenset()  # one page has no template to speak of
    assert common_blocks({1: 2}, 2) == frozenset({1})


@given(
    st.lists(st.lists(st.integers(0, 50), max_size=30), min_size=1, max_size=300),
    st.integers(0, 2**32 - 1),
)
def test_the_summary_keeps_every_block_on_most_pages(pages, template):
    """Misra-Gries: a block on more than half the pages is always a candidate, however
    many other blocks there are, and the summary never holds more than its size (twice the
    most distinct blocks a page has, as SUMMARY_SIZE is to MAX_BLOCKS)."""
    summary = HeavyHitters(size=64)
    with_template = [[*page, template] if i % 3 else page for i, page in enumerate(pages)]
    for page in with_template:
        summary.add_page(pack_blocks(page))
    counts = {b: sum(b in set(p) for p in with_template) for p in with_template for b in p}
    candidates = summary.candidates()
    assert len(candidates) <= 64
    exact = {b: counts.get(b, 0) for b in candidates}
    assert common_blocks(exact, len(pages)) == common_blocks(counts, len(pages))


def _misra_gries(pages: list[list[int]], size: int) -> dict[int, int]:
    """The summary's counters as the textbook loop keeps them, block by block."""
    counts: dict[int, int] = {}
    for page in pages:
        for block in set(page):
            if block in counts:
                counts[block] += 1
            elif len(counts) < size:
                counts[block] = 1
            else:
                for key in list(counts):
                    if counts[key] == 1:
                        del counts[key]
                    else:
                        counts[key] -= 1
    return counts


@given(
    st.lists(st.lists(st.integers(0, 2**32 - 1) | st.integers(0, 40), max_size=20), max_size=60),
    st.integers(1, 48),
)
def test_the_summary_counts_as_the_textbook_loop(pages, size):
    """#26: a page whose new blocks all fit is counted in one step (Counter.update); the
    counters, and so the candidates, are exactly the block-by-block loop's, full or not."""
    summary = HeavyHitters(size=size)
    for page in pages:
        summary.add_page(pack_blocks(page))
    assert dict(summary._counts) == _misra_gries(pages, size)


@given(
    st.lists(
        st.none() | st.lists(st.integers(0, 2**32 - 1) | st.integers(0, 30), max_size=12),
        max_size=40,
    ),
    st.frozensets(st.integers(0, 2**32 - 1) | st.integers(0, 30), max_size=20),
    st.integers(1, 5),
)
def test_the_exact_count_is_the_loop_over_every_page(pages, candidates, chunk):
    """#26: count_candidates, in C a chunk at a time (any chunk size), counts as the loop
    over every page did: each candidate once a page that has it, pages without blocks (None
    or none) not counted, candidates on no page left out."""
    packed = [None if page is None else pack_blocks(page) for page in pages]
    loop = dict.fromkeys(candidates, 0)
    with_blocks = 0
    for page in pages:
        if page:
            with_blocks += 1
            for block in candidates.intersection(page):
                loop[block] += 1
    counts, counted = count_candidates(candidates, iter(packed), chunk)
    assert counted == with_blocks
    assert dict(counts) == {block: n for block, n in loop.items() if n}
    assert common_blocks(counts, counted) == common_blocks(loop, with_blocks)


NAV, TEXT, EDITED, FOOTER_OLD, FOOTER_NEW = 1, 2, 3, 4, 5
TEMPLATE = frozenset({NAV, FOOTER_OLD, FOOTER_NEW})
PAGE = pack_blocks([NAV, TEXT, FOOTER_OLD])
REBUILT = pack_blocks([NAV, TEXT, FOOTER_NEW])  # a new footer: the same main text
EDITED_PAGE = pack_blocks([NAV, EDITED, FOOTER_NEW])
STARTED = 1_000  # this run's start
OLD, NEW = 100, 900  # Last-Modified headers before and after a rebuild


def _date(mode: str, blocks: bytes, before: LastRun | None, **facts: object) -> Dated:
    given: dict = {"header": NEW, "stamped": False, "believable": True, **facts}
    return date_page(
        mode, blocks=blocks, before=before, template=TEMPLATE, started=STARTED, **given
    )


def test_content_date_moves_only_with_the_main_text():
    assert content_date(PAGE, 50, REBUILT, TEMPLATE, STARTED) == 50
    assert content_date(PAGE, None, REBUILT, TEMPLATE, STARTED) is None  # still not known
    assert content_date(PAGE, 50, EDITED_PAGE, TEMPLATE, STARTED) == STARTED
    assert content_date(None, 50, PAGE, TEMPLATE, STARTED) is None  # first sight
    assert content_date(PAGE, 50, None, TEMPLATE, STARTED) is None  # not an HTML page


def test_a_rebuild_keeps_every_lastmod_but_the_edited_page():
    for mode in (AUTO, CONTENT):
        before = LastRun(PAGE, None, OLD, HEADER)
        assert _date(mode, REBUILT, before) == Dated(OLD, HEADER, None)
        assert _date(mode, EDITED_PAGE, before) == Dated(NEW, HEADER, STARTED)
        # no Last-Modified, or one not believed, or stamped: the run's start
        assert _date(mode, EDITED_PAGE, before, header=None) == Dated(STARTED, CONTENT, STARTED)
        assert _date(mode, EDITED_PAGE, before, believable=False).lastmod == STARTED
        assert _date(mode, EDITED_PAGE, before, stamped=True).lastmod == STARTED
        # a header no later than the lastmod it had does not date a change seen since
        assert _date(mode, EDITED_PAGE, before, header=OLD).lastmod == STARTED


def test_header_is_the_raw_header_and_none_is_none():
    before = LastRun(PAGE, 50, OLD, HEADER)
    assert _date(HEADER, REBUILT, before) == Dated(NEW, HEADER, 50)
    assert _date(HEADER, REBUILT, before, believable=False).lastmod == NEW
    assert _date(NONE, EDITED_PAGE, before) == Dated(None, NONE, STARTED)


def test_first_sight_follows_choose():
    for mode in (AUTO, CONTENT, HEADER, NONE):
        for believable in (True, False):
            expected = choose(mode, NEW, None, believable)
            dated = _date(mode, PAGE, None, believable=believable)
            assert (dated.lastmod, dated.source) == expected and dated.changed is None
    # a history without a published lastmod (first night: none was believable)
    nothing = LastRun(PAGE, None, None, NONE)
    assert _date(AUTO, REBUILT, nothing) == Dated(NEW, HEADER, None)
    assert _date(CONTENT, REBUILT, nothing, believable=False) == Dated(None, NONE, None)
    # a history without blocks (a --lastmod header run made none): first sight too
    assert _date(AUTO, PAGE, LastRun(None, None, OLD, HEADER)) == Dated(NEW, HEADER, None)


_nights = st.lists(
    st.tuples(
        st.none() | st.integers(0, 2_000),  # Last-Modified
        st.booleans(),  # stamped
        st.booleans(),  # the site's headers believable
        st.booleans(),  # a rebuild: a new footer (the template) or not
        st.booleans(),  # the main text edited
    ),
    min_size=1,
    max_size=12,
)


@given(st.sampled_from([AUTO, CONTENT]), _nights)
def test_a_lastmod_moves_only_when_the_main_text_does(mode, nights):
    """Whatever the headers and the believability test do, night after night: once a
    lastmod is published it never disappears, and it moves only on a night the main text
    moved, then to a later header or that night's start."""
    before: LastRun | None = None
    text = 0
    for night, (header, is_stamped, believable, rebuilt, edited) in enumerate(nights):
        started = 10_000 * (night + 1)
        text += edited
        blocks = pack_blocks([NAV, 100 + text, FOOTER_NEW if rebuilt else FOOTER_OLD])
        dated = date_page(
            mode, header=header, stamped=is_stamped, blocks=blocks, before=before,
            template=TEMPLATE, believable=believable, started=started,
        )  # fmt: skip
        if before is not None and before.lastmod is not None:
            if edited:
                assert dated.lastmod == started or (
                    dated.lastmod == header and header > before.lastmod
                )
            else:
                assert (dated.lastmod, dated.source) == (before.lastmod, before.source)
        before = LastRun(blocks, dated.changed, dated.lastmod, dated.source)


@given(
    st.sampled_from([AUTO, CONTENT]),
    st.lists(
        st.tuples(
            st.none() | st.integers(0, 2_000),  # Last-Modified
            st.booleans(),  # stamped
            st.booleans(),  # the site's headers believable
            st.none() | st.sampled_from([PAGE, EDITED_PAGE]),  # blocks, or none (a PDF)
        ),
        min_size=1,
        max_size=12,
    ),
)
def test_a_published_lastmod_never_disappears_even_without_blocks(mode, nights):
    """A PDF, a page without main text, or one whose blocks come and go (review #3): once
    published, its lastmod stays whatever the believability test says, and moves only to
    a believable, unstamped, later header, or (its text seen to change) a run's start."""
    before: LastRun | None = None
    for night, (header, is_stamped, believable, blocks) in enumerate(nights):
        started = 10_000 * (night + 1)
        dated = date_page(
            mode, header=header, stamped=is_stamped, blocks=blocks, before=before,
            template=TEMPLATE, believable=believable, started=started,
        )  # fmt: skip
        if before is not None and before.lastmod is not None:
            assert dated.lastmod is not None
            if dated.lastmod != before.lastmod:
                moved_text = (
                    blocks is not None and before.blocks is not None and blocks != before.blocks
                )
                by_header = (
                    dated.lastmod == header and believable and not is_stamped
                    and header > before.lastmod
                )  # fmt: skip
                assert by_header or (moved_text and dated.lastmod == started)
        before = LastRun(blocks, dated.changed, dated.lastmod, dated.source)


def test_a_pdf_keeps_its_lastmod_when_its_headers_stop_being_believed():
    before = LastRun(None, None, OLD, HEADER)
    for believable, is_stamped in ((False, False), (True, True), (False, True)):
        dated = _date(AUTO, None, before, believable=believable, stamped=is_stamped)
        assert dated == Dated(OLD, HEADER, None)
        assert _date(CONTENT, None, before, believable=believable, stamped=is_stamped) == dated


def test_a_lastmod_needs_the_template_only_for_blocks_that_moved():
    """#26: the same packing is the same content whatever the template; without blocks on
    both sides no content date is compared."""
    assert not needs_template(PAGE, PAGE) and not needs_template(None, PAGE)
    assert not needs_template(PAGE, None) and needs_template(PAGE, REBUILT)
    for template in (frozenset(), TEMPLATE, frozenset({TEXT})):  # whatever the template
        dated = date_page(
            AUTO, header=None, stamped=False, blocks=PAGE, before=LastRun(PAGE, 7, 7, CONTENT),
            template=template, believable=True, started=STARTED,
        )  # fmt: skip
        assert dated == Dated(7, CONTENT, 7)


def test_the_template_is_kept_only_for_the_same_pages_with_their_blocks():
    night = NightTemplate()
    assert not night.page(5, PAGE, PAGE)
    assert not night.page(3, None, PAGE)  # no blocks: not counted, not held
    assert not night.page(9, REBUILT, REBUILT)
    assert night.counted() == id_bits([5, 9])
    assert night.kept(id_bits([5, 9]))
    assert not night.kept(None)  # the last run's pages not known
    assert not night.kept(id_bits([5])) and not night.kept(id_bits([5, 9, 11]))
    assert night.page(11, EDITED_PAGE, PAGE)  # moved: its lastmod needs the template
    assert not night.kept(id_bits([5, 9, 11]))
    other = NightTemplate()
    assert not other.page(5, PAGE, None)  # a page without a history row
    assert not other.kept(id_bits([5]))


@given(
    st.lists(st.lists(st.integers(0, 50), max_size=30), min_size=1, max_size=300),
    st.integers(0, 2**32 - 1),
    st.randoms(use_true_random=False),
)
def test_the_pages_chosen_as_they_arrive_can_be_fed_in_another_order(pages, template, rng):
    """#26: journal.Dating notes which pages the summary chooses (offered) as they arrive
    and feeds them only if it counts, in loc order: every block on more than half of
    them is a candidate all the same."""
    summary = HeavyHitters(size=64)
    with_template = [[*page, template] if i % 3 else page for i, page in enumerate(pages)]
    chosen = [page for page in with_template if summary.offered()]
    rng.shuffle(chosen)
    for page in chosen:
        if page:
            summary.feed(pack_blocks(page))
    counts = {b: sum(b in set(p) for p in with_template) for p in with_template for b in p}
    exact = {b: counts.get(b, 0) for b in summary.candidates()}
    assert len(exact) <= 64
    assert common_blocks(exact, len(pages)) == common_blocks(counts, len(pages))
