"""Links to settled URLs skipped by id (crawler.shell.settled): exactly the workers' rule."""

from __future__ import annotations

from array import array

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from crawler.core.decide import HTTP_ERROR, REDIRECT, Decision
from crawler.core.frontier import Frontier, Task
from crawler.core.history import HistoryLinks
from crawler.core.report import Tally
from crawler.core.urls import UNSETTLED, LinkResolver, link_matters
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
    new=st.lists(st.integers(0, 90), max_size=5),
)
# settled deeper than the links (a twin's depth), broken (UNSETTLED), past a byte, never
@example(settled={5: 10, 6: UNSETTLED, 7: 255}, picked=[5, 6, 7, 8], depth=2, new=[1])
def test_a_link_is_left_out_only_when_it_is_settled_at_its_depth(
    settled: dict[int, int], picked: list[int], depth: int, new: list[int]
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
    # a changed page's links, by name (#26): their ids looked up, the same answer, and a
    # URL with no id (new to the crawl) among them kept where it is
    named: list[str] = [URLS[i] for i in picked]
    for at in sorted(set(new), reverse=True):
        named.insert(at, f"http://example.com/new/{at}")
    assert ids.unsettled([URLS[i] for i in picked], depth) == kept
    assert ids.unsettled(named, depth) == [url for url in named if url in kept or "/new/" in url]


@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(["add", "lower", "pop", "settle", "hush", "hush"]),
            st.integers(0, 7),  # few URLs: each met by many steps
            st.integers(0, 9) | st.just(UNSETTLED) | st.just(300),
        ),
        max_size=150,
    ),
    picked=st.lists(st.integers(0, 9), max_size=90),  # 8 and 9: never met
    depth=st.integers(0, 10),
)
# a hushed URL moved up, then taken at its new depth; settled deeper than the links (the
# look-up by table); hushed deeper, and settled while still queued (not kept: the queue's)
@example([("add", 0, 2), ("hush", 0, 0), ("lower", 0, 1), ("pop", 0, 0)], [0], 1)
@example([("add", 0, 0), ("pop", 0, 0), ("settle", 0, 1)], [0], 0)
@example([("add", 0, 3), ("hush", 0, 0), ("add", 1, 1), ("settle", 1, 0)], [0, 1, 9], 2)
def test_by_name_a_link_is_left_out_only_when_it_is_settled_at_its_depth(
    steps: list[tuple[str, int, int]], picked: list[int], depth: int
) -> None:
    """#26: a crawl without a history checks its pages' links by name (SettledNames, kept
    in the frontier's own values), with the rule the workers' LinkResolver keeps
    (link_matters): a judged URL's last word counts, a queued URL is hushed from its queued
    depth until it moves up or is taken; a URL not met, still queued when settled, or
    settled deeper than kept is looked at, never left out; and the queue is the one a
    frontier that is never told anything keeps."""
    frontier, plain = Frontier(), Frontier()
    names = SettledNames(frontier)
    queued: dict[str, int] = {}  # the model: url -> its queued depth
    quiet: dict[str, int] = {}  # url -> the depth from which a link to it is no news
    for how, i, at in steps:
        url, at_least_0 = URLS[i], max(at, 0) % 12
        if how == "add":
            new = frontier.add(url, at_least_0, None)
            assert new == plain.add(url, at_least_0, None)
            if new:
                queued[url] = at_least_0
        elif how == "lower":
            moved = frontier.lower(url, at_least_0, None)
            assert moved == plain.lower(url, at_least_0, None)
            if moved:
                queued[url] = at_least_0
                quiet.pop(url, None)  # looked at again at its new depth
        elif how == "pop":
            task = frontier.pop()
            assert task == plain.pop()
            if task is not None:
                del queued[task.url]
                quiet.pop(task.url, None)  # in flight: every link looked at
        elif how == "settle":
            names.settle(url, at)
            if url in frontier and url not in queued:
                if 0 <= at < 256:
                    quiet[url] = at
                else:
                    quiet.pop(url, None)
        elif url in queued:  # hush, as Links.follow_targets does: at its queued depth
            names.hush(url, queued[url])
            quiet[url] = queued[url]
        else:
            names.hush(url, at_least_0)  # not queued: nothing to hush
        assert {u for u in URLS if frontier.is_queued(u)} == set(queued)
    links = [URLS[i] for i in picked]
    rule = [u for u in links if u not in quiet or link_matters(quiet[u], depth)]
    assert list(names.unsettled(links, depth)) == rule
    assert frontier.drain() == plain.drain()


def test_by_name_the_workers_are_told_of_a_settled_url_not_of_a_hushed_one() -> None:
    told_workers: list[tuple[str, int]] = []
    frontier = Frontier()
    names = SettledNames(frontier)
    assert names.unsettled(URLS[:3], 0) == URLS[:3]  # nothing settled: all kept
    frontier.add(URLS[3], 2, None)
    frontier.add(URLS[4], 1, None)
    assert frontier.pop() == Task(URLS[4], 1, None) and frontier.pop() == Task(URLS[3], 2, None)
    frontier.add(URLS[4], 1, None)  # met already: not queued again
    frontier.add(URLS[6], 1, None)
    settle = told(names, lambda url, depth: told_workers.append((url, depth)))
    settle(URLS[3], 2)
    names.hush(URLS[6], 1)
    assert told_workers == [(URLS[3], 2)]
    assert names.unsettled([URLS[3], URLS[6], URLS[5]], 1) == [URLS[3], URLS[5]]
    assert names.unsettled([URLS[3], URLS[6], URLS[5]], 2) == [URLS[5]]
    settle(URLS[4], 300)  # deeper than a depth is kept: looked at, never left out
    settle(URLS[5], 0)  # never met: nothing to keep (its links go through the loop)
    assert names.unsettled([URLS[4], URLS[5]], 400) == [URLS[4], URLS[5]]


@pytest.mark.interpreted
def test_settled_and_hushed_urls_cost_the_frontier_no_object_of_their_own() -> None:
    """#26: the depth from which a link is no news is the frontier's value for the URL, a
    shared object (a small int, a range per depth), not a second table of names beside
    the frontier's, nor an object per URL: about 2 MB at 20,000 pages before."""
    frontier = Frontier()
    names = SettledNames(frontier)
    urls = [f"https://example.com/{i}" for i in range(3_000)]
    for i, url in enumerate(urls):
        frontier.add(url, i % 7, None)
    for _ in range(len(urls) // 2):
        task = frontier.pop()
        assert task is not None
        names.settle(task.url, task.depth)
    for url in urls:
        if frontier.is_queued(url):
            names.hush(url, urls.index(url) % 7)
    values = {id(value) for value in frontier.seen.values()}
    assert len(values) <= 2 * 7
    assert not any(vars(names).get(kept) for kept in ("_depths", "_table"))


def test_urls_never_settled_and_ids_past_the_table_are_kept() -> None:
    ids = SettledIds(lambda: IDS)
    ids.settle(URLS[0])
    ids.settle("http://example.com/never-interned")  # no id: nothing to keep
    assert ids.unsettled(_links([0, 1, 399]), 5) == [URLS[1], URLS[399]]
    assert ids.unsettled(_links([0]), 5) == []  # one link as any number
    assert ids.unsettled(_links([1]), 5) == [URLS[1]]
    # by name (a changed page's links): a URL without an id is new, and kept
    new = "http://example.com/never-interned"
    assert ids.unsettled([URLS[0], new, URLS[399], URLS[0]], 5) == [new, URLS[399]]
    assert ids.unsettled([], 5) == []


def test_by_name_a_url_with_an_id_past_those_settled_is_kept() -> None:
    """The ids a page's names are given may run past the depths kept so far (a URL
    interned after the last settled one): not settled, kept, and the table grown."""
    table = dict(IDS)
    ids = SettledIds(lambda: table)
    ids.settle(URLS[0])
    table["http://example.com/later"] = 5_000
    assert ids.unsettled([URLS[0], "http://example.com/later"], 1) == ["http://example.com/later"]
    ids.settle("http://example.com/later", 0)
    assert ids.unsettled(["http://example.com/later", URLS[1]], 1) == [URLS[1]]


def test_the_workers_are_told_too() -> None:
    told_workers: list[tuple[str, int]] = []
    ids = SettledIds(lambda: IDS)
    settle = told(ids, lambda url, depth: told_workers.append((url, depth)))
    settle(URLS[3], 2)
    assert told_workers == [(URLS[3], 2)]
    assert ids.unsettled(_links([3, 4]), 2) == [URLS[4]]
    assert ids.unsettled(_links([3, 4]), 1) == [URLS[3], URLS[4]]


def test_a_hushed_url_is_skipped_from_its_depth_on_until_it_is_unsettled() -> None:
    """#26: a queued URL whose early referrers are read back at the end if it is broken
    (crawler.shell.referrers): its links at its queued depth or deeper are left out, here
    only (the workers are not told); settled UNSETTLED (judged broken) every link to it
    counts again, the workers told."""
    told_workers: list[tuple[str, int]] = []
    ids = SettledIds(lambda: IDS)
    settle = told(ids, lambda url, depth: told_workers.append((url, depth)))
    ids.at(IDS[URLS[3]], 2)
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


class _Rows:
    """A state that notes the referrer rows it is given, one call or a page's at once."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str]] = []

    def referred(self, url: str, referrer: str) -> None:
        self.rows.append((url, referrer))

    def referred_by(self, urls: list[str], referrer: str) -> None:
        assert urls  # no call without a row
        self.rows += [(url, referrer) for url in urls]

    def decided(self, *record: object) -> None:
        pass  # a URL judged: its early referrers are dropped (not a row here)


def _kept_alone(journal: Journal, url: str, referrer: str) -> bool:
    """The early referrers' rule a link at a time, as the journal kept them before #26
    batched a page's (the reference the batch is held to)."""
    refs = journal.refs.get(url, ())
    if len(refs) < EARLY_REFERRERS and referrer not in refs:
        journal.refs[url] = refs = (*refs, referrer)
        journal.state.referred(url, referrer)  # type: ignore[union-attr]
        return len(refs) == EARLY_REFERRERS
    return False


@given(
    pages=st.lists(
        st.tuples(st.lists(st.integers(0, 7), max_size=9), st.integers(0, 6)), max_size=12
    ),
    judged=st.lists(st.integers(0, 7), max_size=4),
)
def test_a_page_s_early_referrers_kept_at_once_are_those_kept_one_by_one(
    pages: list[tuple[list[int], int]], judged: list[int]
) -> None:
    """#26: early_referrers (a revived page's links to URLs waiting, in one call) keeps the
    referrers the rule kept a link at a time (_kept_alone), gives the state the same rows in
    the same order, and names the URLs for which it said True, in order: the broken-links
    report names the same pages."""
    one, batch = Journal(lambda url: url, Tally()), Journal(lambda url: url, Tally())
    one.state, batch.state = _Rows(), _Rows()  # type: ignore[assignment]
    for n, (linked, referrer) in enumerate(pages):
        if n == len(pages) // 2:  # some judged midway: their referrers dropped
            for i in judged:
                for journal in (one, batch):
                    journal.record(URLS[i], 200, Decision(REDIRECT, URLS[20]), 1, None)
        urls = [URLS[i] for i in linked]
        full = [url for url in urls if _kept_alone(one, url, URLS[100 + referrer])]
        assert batch.early_referrers(urls, URLS[100 + referrer]) == full
    assert batch.refs == one.refs
    assert batch.state.rows == one.state.rows  # type: ignore[attr-defined]
