"""What a conditional request sends, apart from the history it is read from
(crawler.core.history): it crosses to worker processes in their job messages, packed by
crawler.core.wire from its annotations, so it lives in a module setup.py does not compile."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Validators"]


@dataclass(slots=True)
class Validators:
    """What a conditional request sends: If-None-Match, If-Modified-Since (either may be
    missing). Never changed once made, but not frozen: one is made for every page asked
    again (Prior.validators), and a frozen class's __init__ (an object.__setattr__ a field)
    costs about twice a plain one's."""

    etag: str | None = None
    modified: str | None = None
