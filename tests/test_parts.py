"""sitemap_out.parts on its own: the rollover rule, which the stable layout applies through
``Parts.fits`` and a fresh run through ``Parts.append``, must be one rule."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from sitemap_out.parts import Parts
from sitemap_out.xml import NS_ALL

records = st.lists(st.tuples(st.integers(1, 400), st.integers(0, NS_ALL)), min_size=1, max_size=60)


@settings(max_examples=150, deadline=None)
@given(
    records=records,
    max_urls=st.integers(1, 12),
    max_bytes=st.integers(1100, 3000),
    xml=st.booleans(),
)
def test_append_rolls_over_where_fits_says(records, max_urls, max_bytes, xml) -> None:
    """Parts cut by append() are the greedy cut that fits() describes, and every file is
    within both limits, its size exactly the PartInfo's."""
    with tempfile.TemporaryDirectory() as folder:
        parts = Parts(
            Path(folder),
            xml=xml,
            gzip=False,
            max_urls=max_urls,
            max_bytes=max_bytes,
            compresslevel=6,
        )
        expected: list[int] = []
        count, body, ns = 0, 0, 0
        for size, own in records:
            rec = ("", b"x" * size, own)
            if parts.fixed[own] + size > max_bytes:
                continue  # too big for any file: the writer refuses it before this point
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
