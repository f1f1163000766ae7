"""What `bertkit inspect` asks of a task (`Task.inspect_view`): the texts, labels and places of
one split as a `View`, which bertkit/inspection counts on (duplicates, leakage, labels, lengths)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class View:
    """What inspection looks at in one split: a text per example (pairs joined with a tab), its
    labels (one for single-label data, several for multi-label or NER, none for regression or
    plain text), and where each example came from."""

    texts: list[str]
    labels: list[list[str]] | None = None
    pairs: list[str] | None = None  # the second texts, tokenized with the first for lengths
    places: list[str] = field(default_factory=list)

    def keys(self) -> list[str]:
        """The text an example is known by: both texts of a pair."""
        if self.pairs is None:
            return self.texts
        return [f"{a}\t{b}" for a, b in zip(self.texts, self.pairs, strict=True)]
