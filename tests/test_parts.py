"""sitemap_out.parts on its own: the rollover rule, which the stable layout applies through
``Parts.fits`` and a fresh run through ``Parts.append``, must be one rule."""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from sitemap_out.parts import Parts
from sitemap_out.xml import NS_ALL

records = st.lists(
    st.tuples(st.integers(1, 400), st.sampled_from([0, 0, 0, 1, 2, 8, NS_ALL])),
    min_size=1,
    max_size=60,
)


@settings(max_examples=200)
@given(records=records, max_urls=st.integers(1, 12), xml=st.booleans(), data=st.data())
def test_append_rolls_over_where_fits_says(records, max_urls, xml, data) -> None:
    """Parts cut by append() are the greedy cut that fits() describes, and every file is
    within both limits, its size exactly the PartInfo's. max_bytes is often an exact fill
    (a file's fixed bytes plus the first entries), where an off-by-one would show."""
    with tempfile.TemporaryDirectory() as folder:
        kw = {"xml": xml, "gzip": False, "max_urls": max_urls, "compresslevel": 6}
        fixed = Parts(Path(folder), max_bytes=1, **kw).fixed
        fills = [fixed[0] + s for s in itertools.accumulate(size for size, _ in records)]
        fills = [f for f in fills if f >= fixed[NS_ALL] + 400]
        max_bytes = data.draw(
            st.sampled_from(fills) if fills else st.integers(1100, 3000), "max_bytes"
        )
        parts = Parts(Path(folder), max_bytes=max_bytes, **kw)
        expected: list[int] = []
        count, body, ns = 0, 0, 0
        for size, own in records:
            rec = ("", b"x" * size, own)
            if count and not parts.fits(count, body, ns, rec):
                expected.append(count)
                count, body, ns = 0, 0, 0
            count, body, ns = count + 1, body + size, ns | own
            parts.append(rec[1], own, None)
        if count:
            expected.append(count)
        parts.close()
        assert [p.url_count for p in parts.done] == expected
        for info in parts.done:
            size = (Path(folder) / info.name).stat().st_size
            assert size == info.uncompressed_bytes <= max_bytes
            assert info.url_count <= max_urls


@settings(max_examples=100)
@given(
    records=records,
    max_urls=st.integers(1, 12),
    max_bytes=st.integers(300, 4000),
    xml=st.booleans(),
    stylesheet=st.sampled_from([None, "/s.xsl"]),
)
def test_holds_is_every_first_entries_fitting(records, max_urls, max_bytes, xml, stylesheet):
    """#26: Parts.holds(count, bytes, namespaces) of some entries is true only when each of
    them, added in turn, fits (the stable layout then takes them all without reading them
    again); it rests on a part's fixed bytes growing with its namespaces, held here too."""
    with tempfile.TemporaryDirectory() as folder:
        kw = {"xml": xml, "gzip": False, "compresslevel": 6, "stylesheet": stylesheet}
        parts = Parts(Path(folder), max_urls=max_urls, max_bytes=max_bytes, **kw)
        for a, b in itertools.product(parts.fixed, repeat=2):
            assert parts.fixed[a] <= parts.fixed[a | b]
        count, body, ns, every = 0, 0, 0, True
        for size, own in records:
            every = every and parts.fits(count, body, ns, ("", b"x" * size, own))
            count, body, ns = count + 1, body + size, ns | own
            assert parts.holds(count, body, ns) == every
