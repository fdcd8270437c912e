"""The frontier: breadth-first, each URL at most once, depth corrections, exact counts."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from crawler.core.frontier import Frontier, Task


def test_breadth_first_and_first_found_first():
    f = Frontier()
    assert f.add("a", 0, None)
    assert f.add("c", 2, "b") and f.add("b", 1, "a") and f.add("d", 1, "a")
    assert not f.add("b", 1, "x")
    assert [f.pop() for _ in range(5)] == [
        Task("a", 0, None),
        Task("b", 1, "a"),
        Task("d", 1, "a"),
        Task("c", 2, "b"),
        None,
    ]
    assert len(f) == 0 and f.seen_count == 4


def test_lower_moves_a_queued_url_up_once():
    f = Frontier()
    f.add("x", 3, "deep")
    f.add("y", 2, None)
    assert f.lower("x", 1, "shallow")
    assert not f.lower("x", 2, "other")  # not smaller
    assert len(f) == 2
    assert f.pop() == Task("x", 1, "shallow")
    assert f.pop() == Task("y", 2, None)
    assert f.pop() is None  # the stale entry at depth 3 is skipped
    assert not f.lower("x", 0, "late")  # done URLs never come back


def test_mark_seen_and_queries():
    f = Frontier()
    assert f.mark_seen("s") and not f.mark_seen("s")
    assert not f.add("s", 0, None)
    f.add("q", 0, None)
    assert "s" in f and "q" in f and "z" not in f
    assert f.is_queued("q") and not f.is_queued("s")
    assert "q" in f.seen
    f.pop()
    assert not f.is_queued("q")


def test_a_shallower_url_added_after_deeper_pops_pop_first():
    f = Frontier()
    f.add("deep", 5, None)
    assert f.pop().url == "deep"
    f.add("d6", 6, None)
    f.add("shallow", 1, None)
    assert [f.pop().url, f.pop().url] == ["shallow", "d6"]


@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 6), st.booleans()), max_size=200))
def test_every_url_pops_once_at_its_smallest_queued_depth(ops):
    f = Frontier()
    best: dict[str, int] = {}
    popped: list[Task] = []
    for n, depth, pop_now in ops:
        url = f"u{n}"
        if not f.add(url, depth, None) and f.is_queued(url):
            f.lower(url, depth, None)
        if f.is_queued(url):
            best[url] = min(best.get(url, depth), depth)
        if pop_now and (task := f.pop()) is not None:
            popped.append(task)
    popped += f.drain()
    assert len(f) == 0
    urls = [t.url for t in popped]
    assert len(urls) == len(set(urls))
    assert {t.url: t.depth for t in popped} == best
