"""Pairs of training examples made from their labels, for the contrastive route of few-shot
classification (`classify.strategy: contrastive`): two examples that share a label are a positive
pair (target 1), two that share none a negative one (target 0).

Every round visits each example once in a shuffled order and gives it one positive and one
negative partner, so the pairs are balanced (as many positives as negatives) whatever the classes'
sizes, and the same seed makes the same pairs.
"""

from __future__ import annotations

import random

POSITIVE, NEGATIVE = 1.0, 0.0


def label_sets(encoded: list, multi_label: bool) -> list[frozenset]:
    """Each example's labels as a set of label ids: a single-label example's one id, a multi-label
    example's row of 0/1 read as the ids that are on (an example with none is the empty set)."""
    if multi_label:
        return [frozenset(i for i, on in enumerate(row) if on) for row in encoded]
    return [frozenset([int(label)]) for label in encoded]


def related(a: frozenset, b: frozenset) -> bool:
    """Do two examples belong together: a label in common, or both with no label at all."""
    return bool(a & b) or (not a and not b)


def make_pairs(sets: list[frozenset], rounds: int, seed: int) -> list[tuple[int, int, float]]:
    """(first, second, target) index pairs: `rounds` rounds, each giving every example one positive
    and one negative partner. An example with no possible partner of one kind (the only one of its
    class, or one whose labels every example shares) gives neither, to keep the pairs balanced."""
    rng = random.Random(seed)
    groups: dict[frozenset, list[int]] = {}
    for i, s in enumerate(sets):
        groups.setdefault(s, []).append(i)
    partners = {key: _partners(key, groups) for key in groups}
    pairs: list[tuple[int, int, float]] = []
    order = list(range(len(sets)))
    for _ in range(rounds):
        rng.shuffle(order)
        for i in order:
            positives, negatives = partners[sets[i]]
            positives = [j for j in positives if j != i]
            if not positives or not negatives:
                continue
            pairs.append((i, rng.choice(positives), POSITIVE))
            pairs.append((i, rng.choice(negatives), NEGATIVE))
    return pairs


def can_pair(sets: list[frozenset]) -> bool:
    """Whether any example has both a positive and a negative partner (make_pairs gives pairs)."""
    groups: dict[frozenset, int] = {}
    for s in sets:
        groups[s] = groups.get(s, 0) + 1
    for key in groups:
        positives = sum(n for other, n in groups.items() if related(key, other)) - 1  # not the example itself
        if positives > 0 and any(not related(key, other) for other in groups):
            return True
    return False


def _partners(key: frozenset, groups: dict[frozenset, list[int]]) -> tuple[list[int], list[int]]:
    positives, negatives = [], []
    for other, members in groups.items():
        (positives if related(key, other) else negatives).extend(members)
    return positives, negatives


def examples_per_class(sets: list[frozenset], n_labels: int) -> float:
    """The training examples a class has on average (an example counts once for each of its labels)."""
    return sum(len(s) for s in sets) / max(n_labels, 1)
