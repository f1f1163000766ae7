"""Extended grapheme clusters: what a reader sees as one character (a letter with its combining
marks, an emoji with its skin tone, variation selector or joined emoji, a flag, CR LF, a Hangul
syllable written as jamo), as Unicode's text segmentation rules (UAX #29) define them.

Tokenizers often drop the marks that belong to a character (a BERT normaliser strips accents and
variation selectors), so a token's character offsets can end before the marks of its last
character. Every character span bertkit returns (an answer, an entity) is widened here to whole
clusters, so `text[start:end]` never cuts one in two, and never starts or ends with white space.
"""

from __future__ import annotations

import bisect

import regex

_CLUSTER = regex.compile(r"\X")


def boundaries(text: str) -> list[int]:
    """Every position in `text` where a cluster starts, and `len(text)`."""
    if text.isascii() and "\r\n" not in text:  # every ASCII character but CR LF is a cluster of its own
        return list(range(len(text) + 1))
    return [m.start() for m in _CLUSTER.finditer(text)] + [len(text)]


class Graphemes:
    """The cluster boundaries of one text, for snapping many spans of it."""

    def __init__(self, text: str):
        self.text = text
        self.bounds = boundaries(text)

    def is_boundary(self, position: int) -> bool:
        at = bisect.bisect_left(self.bounds, position)
        return at < len(self.bounds) and self.bounds[at] == position

    def start_of(self, position: int) -> int:
        """The start of the cluster holding `position` (`position` itself on a boundary)."""
        return self.bounds[max(bisect.bisect_right(self.bounds, position) - 1, 0)]

    def snap(self, start: int, end: int) -> tuple[int, int]:
        """The smallest span of whole clusters that holds `text[start:end]`, less the clusters at
        its edges that begin with white space (a byte-level token's offsets include the space
        before it; a lone accent after a space makes one cluster with the space). Such a cluster
        stays only when it is all there is and is not white space alone; (end, end) otherwise."""
        bounds = self.bounds
        first = bisect.bisect_right(bounds, start) - 1 if start < bounds[-1] else len(bounds) - 1
        last = max(bisect.bisect_left(bounds, end), first)
        while last - first > 1 and self.text[bounds[first]].isspace():
            first += 1
        while last - first > 1 and self.text[bounds[last - 1]].isspace():
            last -= 1
        if last - first == 1 and self.text[bounds[first] : bounds[last]].isspace():
            first = last
        return bounds[first], bounds[last]


def snap(text: str, start: int, end: int) -> tuple[int, int]:
    """`(start, end)` widened to whole clusters of `text`, white space at the edges left out (one
    span; use `Graphemes` for many)."""
    return Graphemes(text).snap(start, end)


def join_split_words(text: str, words: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    """Words `(word, start, end)` of `text` in order, where two neighbours that share a cluster
    (`$` and the variation selector after it, MeCab's word and the lone mark after it, the two
    words NFKC makes of ㍿) become one word, `text[start:end]`: no cluster then belongs to two
    words, so spans built from whole words cannot overlap once snapped to clusters."""
    if not words:
        return words
    clusters = Graphemes(text)
    out: list[tuple[str, int, int]] = []
    for word, start, end in words:
        if out and out[-1][2] > clusters.start_of(start):  # the word before reaches into this one's cluster
            first, last = out[-1][1], max(out[-1][2], end)
            out[-1] = (text[first:last], first, last)
        else:
            out.append((word, start, end))
    return out
