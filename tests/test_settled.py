"""Links to settled URLs skipped by id (crawler.shell.settled): exactly the workers' rule."""

from __future__ import annotations

from array import array

from hypothesis import given
from hypothesis import strategies as st

from crawler.core.decide import HTTP_ERROR, REDIRECT, Decision
from crawler.core.history import HistoryLinks
from crawler.core.report import Tally
from crawler.core.urls import UNSETTLED, LinkResolver
from crawler.shell.journal import EARLY_REFERRERS, Journal
from crawler.shell.settled import SettledIds, SettledNames, told

URLS = [f"http://example.com/p{i}" for i in range(400)]
IDS = {url: uid for uid, url in enumerate(URLS, start=1)}
NAMES = [None, *URLS]  # id -> URL, as the state's table


def _links(picked: list[int]) -> HistoryLinks:
    return HistoryLinks(array("I", [i + 1 for i in picked]).tobytes(), NAMES)


@given(
    settled=st.dictionaries(
        st.integers(0, 399), st.integers(0, 300) | st.just(UNSETTLED), max_size=300
    ),
    picked=st.lists(st.integers(0, 399), max_size=90),
    depth=st.integers(0, 300),
)
def test_a_link_is_left_out_only_when_it_is_settled_at_its_depth(
    settled: dict[int, int], picked: list[int], depth: int
) -> None:
    ids = SettledIds(lambda: IDS)
    for i, at in settled.items():
        ids.settle(URLS[i], at)
    kept = ids.unsettled(_links(picked), depth)
    # the workers' filter, by name (LinkResolver.unsettled): the same rule, link_matters
    workers = LinkResolver()
    urls = [URLS[i] for i in settled]
    workers.settle(urls, list(settled.values()))
    rule = workers.unsettled([URLS[i] for i in picked], depth)
    unsettled = {i for i, at in settled.items() if at == UNSETTLED}
    assert rule == [
        URLS[i] for i in picked if i not in settled or i in unsettled or depth < settled[i]
    ]
    # a settled depth a byte cannot hold (255 on) is kept as unsettled: a link is looked at
    # once more, never left out; below it, exactly the rule
    assert kept == [
        URLS[i]
        for i in picked
        if i not in settled or i in unsettled or settled[i] >= 255 or depth < settled[i]
    ]
    assert set(rule) <= set(kept)


@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(["settle", "hush"]),
            st.integers(0, 39),
            st.integers(0, 9) | st.just(UNSETTLED),
        ),
        max_size=120,
    ),
    picked=st.lists(st.integers(0, 39), max_size=90),
    depth=st.integers(0, 10),
    capacity=st.sampled_from([5, 1_000]),
)
def test_by_name_a_link_is_left_out_only_when_it_is_settled_at_its_depth(
    steps: list[tuple[str, int, int]], picked: list[int], depth: int, capacity: int
) -> None:
    """#26: a crawl without a history checks its pages' links by name (SettledNames), with
    the rule the workers' LinkResolver keeps (link_matters); the last word on a URL counts,
    and a full table adds no more URLs (a link is looked at once more, never left out)."""
    names = SettledNames(capacity)
    last: dict[int, int] = {}
    for how, i, at in steps:
        getattr(names, how)(URLS[i], at)
        last[i] = at
    links = [URLS[i] for i in picked]
    kept = names.unsettled(links, depth)
    rule = [URLS[i] for i in picked if i not in last or last[i] == UNSETTLED or depth < last[i]]
    if capacity == 1_000:
        assert list(kept) == rule
    else:
        assert set(rule) <= set(kept) and [u for u in links if u in set(kept)] == list(kept)


def test_by_name_the_workers_are_told_of_a_settled_url_not_of_a_hushed_one() -> None:
    told_workers: list[tuple[str, int]] = []
    names = SettledNames()
    assert names.unsettled(URLS[:3], 0) == URLS[:3]  # nothing settled: the page's own list
    settle = told(names, lambda url, depth: told_workers.append((url, depth)))
    settle(URLS[3], 2)
    names.hush(URLS[4], 1)
    assert told_workers == [(URLS[3], 2)]
    assert names.unsettled([URLS[3], URLS[4], URLS[5]], 1) == [URLS[3], URLS[5]]
    assert names.unsettled([URLS[3], URLS[4], URLS[5]], 2) == [URLS[5]]


def test_urls_never_settled_and_ids_past_the_table_are_kept() -> None:
    ids = SettledIds(lambda: IDS)
    ids.settle(URLS[0])
    ids.settle("http://example.com/never-interned")  # no id: nothing to keep
    assert ids.unsettled(_links([0, 1, 399]), 5) == [URLS[1], URLS[399]]
    assert ids.unsettled(_links([0]), 5) == []  # one link as any number
    assert ids.unsettled(_links([1]), 5) == [URLS[1]]


def test_the_workers_are_told_too() -> None:
    told_workers: list[tuple[str, int]] = []
    ids = SettledIds(lambda: IDS)
    settle = told(ids, lambda url, depth: told_workers.append((url, depth)))
    settle(URLS[3], 2)
    assert told_workers == [(URLS[3], 2)]
    assert ids.unsettled(_links([3, 4]), 2) == [URLS[4]]
    assert ids.unsettled(_links([3, 4]), 1) == [URLS[3], URLS[4]]

    def workers(url: str, depth: int) -> None:
        told_workers.append((url, depth))

    assert told(None, workers) is workers  # no ids kept: the workers alone


def test_a_hushed_url_is_skipped_from_its_depth_on_until_it_is_unsettled() -> None:
    """#26: a queued URL with all its early referrers kept (Links.follow_targets): its
    links at its queued depth or deeper are left out, here only (the workers are not told);
    settled UNSETTLED (judged broken) every link to it counts again, the workers told."""
    told_workers: list[tuple[str, int]] = []
    ids = SettledIds(lambda: IDS)
    settle = told(ids, lambda url, depth: told_workers.append((url, depth)))
    ids.hush(URLS[3], 2)
    assert ids.unsettled(_links([3, 4]), 2) == [URLS[4]]
    assert ids.unsettled(_links([3, 4]), 1) == [URLS[3], URLS[4]]  # closer: it moves up
    assert told_workers == []
    settle(URLS[3], UNSETTLED)
    assert ids.unsettled(_links([3, 4]), 7) == [URLS[3], URLS[4]]
    assert told_workers == [(URLS[3], UNSETTLED)]


def test_the_journal_says_when_early_referrers_are_complete_and_unsettles_a_broken_url() -> None:
    """#26: early_referrer is True once, when the last early referrer is kept (then the URL
    may be hushed); a broken URL with all of them is settled UNSETTLED as it is recorded,
    so that later links to it are looked at (late referrers)."""
    journal = Journal(lambda url: url, Tally())
    settled: list[tuple[str, int]] = []
    journal.settle = lambda url, depth: settled.append((url, depth))
    gone = URLS[9]
    kept = [journal.early_referrer(gone, URLS[i]) for i in range(EARLY_REFERRERS + 2)]
    assert kept == [False] * (EARLY_REFERRERS - 1) + [True, False, False]
    assert journal.early_referrer(gone, URLS[0]) is False  # named already
    journal.record(gone, 404, Decision(HTTP_ERROR, "HTTP 404"), 2, URLS[8])
    assert settled == [(gone, UNSETTLED)]
    assert journal.tally.broken[gone] == (404, [URLS[8], *URLS[:EARLY_REFERRERS]])
    journal.record(URLS[10], 200, Decision(REDIRECT, URLS[11]), 1, None)
    assert settled[-1] == (URLS[10], 0)  # not broken: settled for good, as before


class _Table(list[str | None]):
    """An id -> URL table that notes which ids were named."""

    def __init__(self, names: list[str | None]) -> None:
        super().__init__(names)
        self.asked: set[int] = set()

    def __getitem__(self, index):  # type: ignore[no-untyped-def,override]
        self.asked.add(index)
        return super().__getitem__(index)


@given(
    picked=st.lists(st.integers(0, 399), max_size=90),
    keep=st.lists(st.booleans(), min_size=90, max_size=90),
    named_first=st.booleans(),
)
def test_history_links_are_the_list_they_name_and_pick_names_only_the_kept(
    picked: list[int], keep: list[bool], named_first: bool
) -> None:
    """#26: a revived page's links, named on demand, are the list eager naming gave; pick
    names only the links kept (a revived page whose links are all settled names none)."""
    table = _Table(NAMES)
    links = HistoryLinks(array("I", [i + 1 for i in picked]).tobytes(), table)
    names = [URLS[i] for i in picked]
    mask = bytes(keep[: len(picked)])
    if named_first:
        assert list(links) == names and links == names and names == links
        assert len(links) == len(names) and links[0:2] == names[0:2]
    picked_names = links.pick(mask)
    assert picked_names == [name for name, k in zip(names, mask, strict=True) if k]
    if not named_first:  # only the kept were looked up
        assert table.asked == {i + 1 for i, k in zip(picked, mask, strict=True) if k}
        assert len(links) == len(names) and links == names


def test_a_revived_page_whose_links_are_all_settled_names_none() -> None:
    table = _Table(NAMES)
    ids = SettledIds(lambda: IDS)
    for i in range(5):
        ids.settle(URLS[i])
    links = HistoryLinks(array("I", [1, 2, 3, 4, 5]).tobytes(), table)
    assert ids.unsettled(links, 3) == []
    assert table.asked == set()
    assert ids.unsettled(HistoryLinks(array("I", [1, 7, 2]).tobytes(), table), 3) == [URLS[6]]
    assert table.asked == {7}


def test_settled_names_keeps_the_frontiers_own_string_once_settled():
    """A URL hushed under a page's copy of its name is kept, once settled, under the string
    the journal settles (the frontier's): a dict keeps its first key on a new value, and
    a copy per URL was most of the table's memory (#26)."""
    names = SettledNames()
    own = "https://example.com/" + "page"
    copy = "".join(["https://example.com/", "page"])
    assert copy == own and copy is not own
    names.hush(copy, 1)
    names.settle(own, 0)
    (kept,) = names._depths
    assert kept is own and names.unsettled([copy, "https://example.com/x"], 1) == [
        "https://example.com/x"
    ]
