"""The words of the lines the tool prints: "1 URL", "2 URLs", never "1 URL(s)"."""

from __future__ import annotations


def plural(n: int, word: str, words: str | None = None) -> str:
    """`n word`, the word in the plural unless n is 1 (`words`: an irregular plural)."""
    return f"{n} {word if n == 1 else words or word + 's'}"
