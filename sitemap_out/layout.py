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
left too small. An entry routed to an old part that is the next entry of its published
file, byte for byte, is not written at all (sitemap_out.probe): a part all of whose entries
are its file's is staged as that file.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import date, datetime
from pathlib import Path
from typing import Final

from sitemap_out.parts import PartInfo, Parts
from sitemap_out.previous import OldPart, PreviousSet
from sitemap_out.probe import PartProbe
from sitemap_out.scratch import Bucket, Rec, Scratch, loc_of, tagged_merge

#: The most old parts' probes that read their published files at once (each holds a window
#: of a chunk or so, and a gzipped part's decompressor: about 0.3 MB at most)
_MAX_READING: Final = 16

__all__ = ["StableLayout"]


class StableLayout:
    """Routes entries to the old parts of ``previous`` (reusable), then writes the parts
    through ``parts``; ``now``: the index ``<lastmod>`` of a part written again;
    ``published``: the folder the old parts are published in (None: every entry is
    written to its scratch file)."""

    def __init__(
        self,
        previous: PreviousSet,
        parts: Parts,
        scratch: Scratch,
        now: datetime,
        published: Path | None = None,
    ) -> None:
        self._previous = previous
        self._parts = parts
        self._scratch = scratch
        self._now = now
        self._published = published
        self._tag = tag = parts.group  # scratch names: a layout per group shares the folder
        self._buckets: dict[int, Bucket] = {0: scratch.bucket(f"{tag}-new.records")}
        self._old: dict[int, OldPart] = {}
        for part in previous.parts:
            self._buckets[part.number] = scratch.bucket(f"{tag}-keep-{part.number}.records")
            self._old[part.number] = part
        self._probes: dict[int, PartProbe] = {}  # by old part, made at its first entry
        self._reading: dict[int, None] = {}  # the probes that may read, in the order begun

    @property
    def was_index(self) -> bool:
        """The set was published as an index (then it stays one)."""
        return self._previous.index

    def route(self, number: int | None, loc: str, data: bytes, ns: int) -> None:
        """An entry to its old part's scratch file, or the new URLs' (number None); not
        written while the old part's entries are its published file's (PartProbe)."""
        if number and self._published is not None:
            probe = self._probes.get(number)
            if probe is None:
                probe = self._probes[number] = self._probe(number)
            if probe.feed(data, ns):
                self._buckets[number].held(len(data), ns)
                return
        self._buckets[number or 0].write(loc, data, ns)

    def _probe(self, number: int) -> PartProbe:
        """Old part `number`'s probe, made at its first entry: at most _MAX_READING probes
        read at once (the parts of a layout grown night after night hold interleaved
        ranges of URLs), the one begun first stopped for a new one."""
        reading = self._reading
        for begun in list(reading):  # (those that stopped reading let their place go)
            if not self._probes[begun].reading:
                del reading[begun]
        if len(reading) >= _MAX_READING:
            first = next(iter(reading))
            self._probes[first].stop()
            del reading[first]
        reading[number] = None
        parts, old = self._parts, self._old[number]
        assert self._published is not None
        return PartProbe(
            self._published / old.name, old.digest, old.url_count, parts.headers, parts.footer,
            parts.loc_of, self._scratch.chunk,
        )  # fmt: skip

    def write(self) -> None:
        """Lay the routed entries out in the old parts: each keeps its URLs; a part (not the
        last) left with fewer than a quarter of max_urls gives them to the last part; the
        new URLs fill the last part, then new parts numbered after the highest old one."""
        previous = self._previous
        parts = self._parts
        records, routed = self._scratch.records, self._records
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
                    incoming.append(routed(part.number))
                    continue
                taken = self._write_own(part)
                if taken < bucket.count:  # grew past max_bytes: the rest moves on
                    incoming.append(routed(part.number, taken))
            bucket = self._buckets[tail.number]
            count, body_bytes, ns = self._fitting(tail.number)
            if count < bucket.count:
                incoming.append(routed(tail.number, count))
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
                kept = itertools.islice(routed(tail.number), count - extra.count)
                self._write_routed(tail, kept, records(extra.path))
            else:  # nothing joins the last part (no new URL: most nights): its own, as read
                self._stage_own(tail, ns, count, body_bytes)
        else:
            stream = heapq.merge(*incoming, key=loc_of)
        for _loc, data, own in stream:
            parts.append(data, own, None)
        parts.close()
        # every part written is new as of now (those left unchanged get their old date back)
        parts.restamp(self._now)

    def _records(self, number: int, skip: int = 0) -> Iterator[Rec]:
        """The entries routed to old part `number`, in order, after the first `skip`: those
        its probe matched (read again from the published file), then its scratch file's."""
        path = self._buckets[number].path
        probe = self._probes.get(number)
        matched = 0 if probe is None else probe.count
        if skip >= matched:
            return self._scratch.records(path, skip - matched)
        assert probe is not None
        stream = itertools.chain(probe.prefix(), self._scratch.records(path))
        return itertools.islice(stream, skip, None) if skip else stream

    def _write_own(self, part: OldPart) -> int:
        """Write an old part from its own routed entries alone, as many as fit (_fitting),
        read from the bucket's file rather than copied to a scratch file first; return how
        many it took."""
        count, body_bytes, ns = self._fitting(part.number)
        self._stage_own(part, ns, count, body_bytes)
        return count

    def _fitting(self, number: int) -> tuple[int, int, int]:
        """The count, bytes and namespaces of the most of old part `number`'s first routed
        entries that fit a part: all of them when they do, told by its bucket's totals
        (Parts.holds) without reading them again (an unchanged night's every part: a
        reading of every entry, #26), else read until one does not."""
        parts, bucket = self._parts, self._buckets[number]
        if parts.holds(bucket.count, bucket.size, bucket.ns):
            return bucket.count, bucket.size, bucket.ns
        count, body_bytes, ns = 0, 0, 0
        for rec in self._records(number):
            if not parts.fits(count, body_bytes, ns, rec):
                break
            count, body_bytes = count + 1, body_bytes + len(rec[1])
            ns |= rec[2]
        return count, body_bytes, ns

    def _stage_own(self, part: OldPart, ns: int, count: int, body_bytes: int) -> None:
        """Stage old part `part` from its first `count` routed entries: as its published
        file when those are the entries its probe matched and that file is exactly they
        (PartProbe.complete), else written from them."""
        parts, probe = self._parts, self._probes.get(part.number)
        if probe is not None and count == probe.count and probe.complete(parts.headers[ns]):
            assert self._published is not None
            parts.stage_published(
                part.number, ns, count, body_bytes, self._now,
                source=self._published / part.name, digest=part.digest,
            )  # fmt: skip
            return
        self._stage(part, ns, lambda: self._records(part.number), count, body_bytes)

    def _stage(
        self,
        part: OldPart,
        ns: int,
        source: Callable[[], Iterator[Rec]],
        count: int,
        body_bytes: int,
    ) -> None:
        """Stage old part `part` from the first `count` records `source()` gives."""
        parts = self._parts

        def serialised() -> Iterator[bytes]:
            return (rec[1] for rec in itertools.islice(source(), count))

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
        self._stage(part, ns, lambda: self._scratch.records(chosen.path), count, body_bytes)
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
