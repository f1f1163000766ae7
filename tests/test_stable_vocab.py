"""The WordPiece learner every vocabulary bertkit learns comes from (bertkit/core/stable_vocab.py)."""

from __future__ import annotations

import random

import pytest


def _merges_by_recounting(words, size, specials, min_frequency):
    """The WordPiece method at its plainest: count every adjacent pair again before each merge."""
    from collections import Counter

    counts = Counter(words)
    splits = {w: [w[0]] + ["##" + c for c in w[1:]] for w in counts}
    tokens = list(specials) + sorted({c for w in counts for c in w} - set(specials))
    tokens += sorted({p for parts in splits.values() for p in parts[1:]})
    while len(tokens) < size:
        pairs = Counter()
        for word, parts in splits.items():
            for pair in zip(parts, parts[1:], strict=False):
                pairs[pair] += counts[word]
        if not pairs:
            break
        (left, right), count = min(pairs.items(), key=lambda item: (-item[1], item[0]))
        if count < min_frequency:
            break
        for parts in splits.values():
            i = 0
            while i < len(parts) - 1:
                if parts[i] == left and parts[i + 1] == right:
                    parts[i : i + 2] = [left + right[2:]]
                i += 1
        if left + right[2:] not in tokens:
            tokens.append(left + right[2:])
    return {t: i for i, t in enumerate(tokens)}


@pytest.mark.parametrize("trial", range(40))
def test_wordpiece_learner_keeps_its_counts_right(trial):
    """bertkit's learner keeps pair counts up to date between merges (a heap, stale entries
    skipped): on random words it learns exactly what re-counting every pair before each merge learns."""
    from bertkit.core.stable_vocab import wordpiece_vocab

    rng = random.Random(trial)
    letters = "abcdeé日本"[: rng.randint(2, 9)]
    words = ["".join(rng.choice(letters) for _ in range(rng.randint(1, 8))) for _ in range(rng.randint(1, 80))]
    size, least = rng.randint(5, 150), rng.randint(0, 3)
    specials = ["[PAD]", "[UNK]"]
    assert wordpiece_vocab(words, size, specials, least) == _merges_by_recounting(words, size, specials, least)
