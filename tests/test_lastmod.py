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
    HeavyHitters,
    SiteDates,
    choose,
    common_blocks,
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
