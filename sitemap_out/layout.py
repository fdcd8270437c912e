"""The stable layout: the part files published before keep their URLs (entries must come
in loc order; what the crawler uses).

A URL stays in its part, new URLs fill the last part and then new parts numbered after the
highest, removed URLs leave theirs, and a part (not the last) left with fewer than a quarter
of ``max_urls`` gives its URLs to the last part and is dropped, leaving a gap in the
numbers. A part whose uncompressed bytes and name are those published is not staged at all
(the publish leaves the published file untouched) and keeps its index ``<lastmod>``; a part
written again gets the run's time there. The manifest records the settings of the layout
(base URL, format, gzip, limits) only once a publish is whole, so a set left half-published
by a kill, or made with other settings, is laid out afresh by the next run (then this class
is not used: the parts are written as a fresh run writes them).

Each entry is routed, serialised, to a scratch file for the old part that listed it (or for
the new URLs) and the parts are written at the end, when it is known which of them are
left too small.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator
from dataclasses import replace
from datetime import date, datetime
from pathlib import Path

from sitemap_out.parts import PartInfo, Parts
from sitemap_out.previous import OldPart, PreviousSet
from sitemap_out.scratch import Bucket, Rec, Scratch, loc_of, tagged_merge

__all__ = ["StableLayout"]


class StableLayout:
    """Routes entries to the old parts of ``previous`` (reusable), then writes the parts
    through ``parts``; ``now``: the index ``<lastmod>`` of a part written again."""

    def __init__(
        self, previous: PreviousSet, parts: Parts, scratch: Scratch, now: datetime
    ) -> None:
        self._previous = previous
        self._parts = parts
        self._scratch = scratch
        self._now = now
        self._tag = tag = parts.group  # scratch names: a layout per group shares the folder
        self._buckets: dict[int, Bucket] = {0: scratch.bucket(f"{tag}-new.records")}
        for part in previous.parts:
            self._buckets[part.number] = scratch.bucket(f"{tag}-keep-{part.number}.records")

    @property
    def was_index(self) -> bool:
        """The set was published as an index (then it stays one)."""
        return self._previous.index

    def route(self, number: int | None, loc: str, data: bytes, ns: int) -> None:
        """An entry to its old part's scratch file, or the new URLs' (number None)."""
        self._buckets[number or 0].write(loc, data, ns)

    def write(self) -> None:
        """Lay the routed entries out in the old parts: each keeps its URLs; a part (not the
        last) left with fewer than a quarter of max_urls gives them to the last part; the
        new URLs fill the last part, then new parts numbered after the highest old one."""
        previous = self._previous
        parts = self._parts
        records = self._scratch.records
        fits = parts.fits
        for bucket in self._buckets.values():
            bucket.close()
        quarter = parts.max_urls // 4
        incoming: list[Iterator[Rec]] = [records(self._buckets[0].path)]
        alive = [p for p in previous.parts if self._buckets[p.number].count > 0]
        # new parts never take a number in use; with no old part left, start again from 1
        parts.next_number = 1 + (max(p.number for p in previous.parts) if alive else 0)
        if alive:
            *body, tail = alive
            for part in body:
                bucket = self._buckets[part.number]
                if bucket.count < quarter:
                    incoming.append(records(bucket.path))
                    continue
                taken = self._write_own(part, bucket)
                if taken < bucket.count:  # grew past max_bytes: the rest moves on
                    incoming.append(records(bucket.path, skip=taken))
            bucket = self._buckets[tail.number]
            count, body_bytes, ns = self._fitting(bucket)
            if count < bucket.count:
                incoming.append(records(bucket.path, skip=count))
            stream: Iterator[Rec] = heapq.merge(*incoming, key=loc_of)
            extra = self._scratch.bucket(f"{self._tag}-tail.records")
            for rec in stream:
                if not fits(count, body_bytes, ns, rec):
                    stream = itertools.chain([rec], stream)
                    break
                extra.write(*rec)
                count, body_bytes = count + 1, body_bytes + len(rec[1])
                ns |= rec[2]
            extra.close()
            if extra.count:
                kept = itertools.islice(records(bucket.path), count - extra.count)
                self._write_routed(tail, kept, records(extra.path))
            else:  # nothing joins the last part (no new URL: most nights): its own, as read
                self._stage(tail, ns, bucket.path, count, body_bytes)
        else:
            stream = heapq.merge(*incoming, key=loc_of)
        for _loc, data, own in stream:
            parts.append(data, own, None)
        parts.close()
        # every part written is new as of now (those left unchanged get their old date back)
        parts.restamp(self._now)

    def _write_own(self, part: OldPart, bucket: Bucket) -> int:
        """Write an old part from its own routed entries alone, as many as fit (_fitting),
        read from the bucket's file rather than copied to a scratch file first; return how
        many it took."""
        count, body_bytes, ns = self._fitting(bucket)
        self._stage(part, ns, bucket.path, count, body_bytes)
        return count

    def _fitting(self, bucket: Bucket) -> tuple[int, int, int]:
        """The count, bytes and namespaces of the most of bucket's first entries that fit
        a part: all of them when they do, told by the bucket's totals (Parts.holds)
        without reading them again (an unchanged night's every part: a reading of every
        entry, #26), else read until one does not."""
        parts = self._parts
        if parts.holds(bucket.count, bucket.size, bucket.ns):
            return bucket.count, bucket.size, bucket.ns
        count, body_bytes, ns = 0, 0, 0
        for rec in self._scratch.records(bucket.path):
            if not parts.fits(count, body_bytes, ns, rec):
                break
            count, body_bytes = count + 1, body_bytes + len(rec[1])
            ns |= rec[2]
        return count, body_bytes, ns

    def _stage(self, part: OldPart, ns: int, path: Path, count: int, body_bytes: int) -> None:
        """Stage old part `part` from the first `count` records of the scratch file at path."""
        parts, records = self._parts, self._scratch.records

        def serialised() -> Iterator[bytes]:
            return (rec[1] for rec in itertools.islice(records(path), count))

        published = part.digest if parts.name(part.number) == part.name else None
        parts.stage(part.number, ns, serialised, count, body_bytes, self._now, published=published)

    def _write_routed(self, part: OldPart, first: Iterator[Rec], second: Iterator[Rec]) -> int:
        """Write an old part's new content (first and second merged, each in loc order,
        cut where the limits are reached) to the staging folder; return how many of
        `first` it took."""
        parts = self._parts
        taken = 0
        count, body_bytes, ns = 0, 0, 0
        chosen = self._scratch.bucket(f"{self._tag}-part-{part.number}.records")
        for which, rec in tagged_merge(first, second):
            if not parts.fits(count, body_bytes, ns, rec):
                break
            chosen.write(*rec)
            taken += which == 0
            count, body_bytes = count + 1, body_bytes + len(rec[1])
            ns |= rec[2]
        chosen.close()
        self._stage(part, ns, chosen.path, count, body_bytes)
        chosen.path.unlink()
        return taken

    def keep_unchanged(self, infos: list[PartInfo]) -> list[PartInfo]:
        """A routed part whose bytes and name are those published keeps the published file
        (left untouched) and its index lastmod; every other part is new as of now."""
        old = {p.name: p for p in self._previous.parts}
        digests = self._parts.digests
        out = []
        for info in infos:
            digest = digests.get(info.name)
            before = old.get(info.name)
            if digest is not None and before is not None and before.digest == digest:
                (self._parts.staging / info.name).unlink(missing_ok=True)  # gzip: not staged
                info = replace(info, kept=True, newest_lastmod=_parse_lastmod(before.index_lastmod))
            out.append(info)
        return out


def _parse_lastmod(text: str | None) -> datetime | date | None:
    """An index ``<lastmod>`` as written back to a value that formats to the same text."""
    if text is None:
        return None
    try:
        return datetime.fromisoformat(text) if "T" in text else date.fromisoformat(text)
    except ValueError:
        return None
