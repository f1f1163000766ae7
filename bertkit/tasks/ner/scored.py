"""A tagger's per-sentence results (`bertkit.tasks.contract.scored.Scored`): predicted and gold IOB2 tags.
Entity precision / recall / F1 are micro averages over entities, so a resample of sentences is
scored from three counts per sentence (entities found right, found, in the gold tags), taken
in seqeval's strict IOB2 mode as the metric module takes them."""

from __future__ import annotations

import numpy as np

from bertkit.tasks.contract.scored import Scored, ratio, subset


class Tagged(Scored):
    metrics = ("precision", "recall", "f1")

    def __init__(self, predicted: list[list[str]], gold: list[list[str]], score_fn):
        self.predicted, self.gold, self.score_fn = predicted, gold, score_fn

    def __len__(self) -> int:
        return len(self.gold)

    def references(self) -> list:
        return self.gold

    def score(self, indices=None) -> dict:
        return self.score_fn(subset(self.predicted, indices), subset(self.gold, indices))

    def stats(self) -> np.ndarray:
        """Per sentence: entities predicted exactly right (type and boundaries), predicted, gold."""
        from seqeval.scheme import IOB2, Entities

        rows = []
        for predicted, gold in zip(self.predicted, self.gold, strict=True):
            found = {e.to_tuple()[1:] for e in Entities([predicted], IOB2, suffix=False).entities[0]}
            true = {e.to_tuple()[1:] for e in Entities([gold], IOB2, suffix=False).entities[0]}
            rows.append((len(found & true), len(found), len(true)))
        return np.asarray(rows, dtype=float).reshape(-1, 3)

    def from_sums(self, sums: np.ndarray) -> dict[str, np.ndarray]:
        right, found, true = np.asarray(sums, dtype=float).T
        return {"precision": ratio(right, found), "recall": ratio(right, true), "f1": ratio(2 * right, found + true)}
