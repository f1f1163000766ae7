"""What `bertkit inspect` counts on the texts and labels of the splits, no tokenizer needed:
empty texts, duplicates inside a split, the same text in two splits (leakage), the label
distribution, and the same text carrying different labels (label noise)."""

from __future__ import annotations

import unicodedata
from collections import Counter, defaultdict

from bertkit.tasks.contract.inspection import View

EXAMPLES_SHOWN = 3  # examples quoted per finding


def normalised(text: str) -> str:
    """Compatibility forms folded, case folded, white space collapsed: what a person would call
    the same text."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _quote(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def split_numbers(view: View) -> dict:
    """Examples, empty texts and duplicates of one split."""
    keys = view.keys()
    empty = [i for i, text in enumerate(view.texts) if not text.strip()]
    exact: Counter = Counter(keys)
    folded: Counter = Counter(normalised(k) for k in keys)
    duplicates = sum(n - 1 for n in exact.values() if n > 1)
    return {
        "examples": len(keys),
        "empty": len(empty),
        "empty_examples": [view.places[i] for i in empty[:EXAMPLES_SHOWN]] if view.places else [],
        "duplicates": duplicates,
        "duplicates_normalised": sum(n - 1 for n in folded.values() if n > 1),
        "duplicate_examples": [_quote(k) for k, n in exact.most_common(EXAMPLES_SHOWN) if n > 1],
    }


def overlap(first: View, second: View) -> dict:
    """How many examples of `second` also occur in `first` (exactly, and once normalised)."""
    seen = set(first.keys())
    seen_folded = {normalised(k) for k in seen}
    keys = second.keys()
    shared = [k for k in keys if k in seen]
    return {
        "exact": len(shared),
        "normalised": sum(1 for k in keys if normalised(k) in seen_folded),
        "examples": [_quote(k) for k in dict.fromkeys(shared)][:EXAMPLES_SHOWN],
    }


def label_counts(view: View) -> dict[str, int]:
    counts: Counter = Counter(label for labels in view.labels or [] for label in labels)
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def imbalance(counts: dict[str, int]) -> float | None:
    """The most frequent label's count over the rarest's."""
    if len(counts) < 2:
        return None
    return round(max(counts.values()) / max(min(counts.values()), 1), 2)


def conflicting_labels(view: View) -> dict:
    """Texts that occur more than once with different labels (normalised text)."""
    if view.labels is None:
        return {"texts": 0, "examples": []}
    by_text: dict = defaultdict(set)
    for key, labels in zip(view.keys(), view.labels, strict=True):
        by_text[normalised(key)].add(tuple(sorted(labels)))
    noisy = {text: sorted(found) for text, found in by_text.items() if len(found) > 1}
    shown = [
        f"{_quote(text)} -> {' / '.join('|'.join(labels) or '(none)' for labels in found)}"
        for text, found in list(noisy.items())[:EXAMPLES_SHOWN]
    ]
    return {"texts": len(noisy), "examples": shown}
