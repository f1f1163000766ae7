"""Per-example results of one model on one labelled file (`Evaluation.evaluate_examples`), and the
task's metrics on any subset of those examples.

`bertkit evaluate` reports `scored.score()`, the metrics on every example; `bertkit compare`
also asks for the metrics on bootstrap resamples (`resampled`) and, where a per-example 0/1 is
meaningful, for `correct()` (McNemar's test). Both come from the same object, so the two
commands cannot disagree on a model's numbers.

A subclass implements `score(indices)` with the task's own metric module. When its headline
metrics are sums of per-example numbers (confusion counts, entity counts, exact matches), it
also gives `stats()`, one row of such numbers per example, and `from_sums`, the metrics from
their (weighted) sums: a bootstrap round is then one matrix product, not a call of the metric
module. Otherwise `resampled` calls `score` once per round.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class Scored:
    """One model's per-example results on one data set."""

    metrics: tuple[str, ...] = ()  # the headline metrics (names as in metrics.json) compare reports
    paired: str | None = None  # the metric that `correct()` counts example by example (McNemar)

    def __len__(self) -> int:
        raise NotImplementedError

    def score(self, indices: Sequence[int] | None = None) -> dict:
        """The task's full metrics (as `bertkit evaluate` writes them) on the examples at
        `indices` (repeats allowed), or on all of them when None."""
        raise NotImplementedError

    def references(self) -> list:
        """The gold answers, in order: two models are compared only on the same ones."""
        raise NotImplementedError

    def correct(self) -> np.ndarray | None:
        """Per example, 1 if the model got it right under `paired`, else 0 (None: no such metric)."""
        return None

    def stats(self) -> np.ndarray | None:
        """One row of additive numbers per example (None: the metrics are not sums)."""
        return None

    def from_sums(self, sums: np.ndarray) -> dict[str, np.ndarray]:
        """The headline metrics from rows of summed `stats()` (one row per round)."""
        raise NotImplementedError

    def resampled(self, weights: np.ndarray) -> dict[str, np.ndarray]:
        """The headline metrics on each resample: `weights[r, i]` is how often example i is drawn
        in round r. Returns {metric: one value per round}."""
        weights = np.asarray(weights)
        stats = self.stats()
        if stats is not None:
            return self.from_sums(weights @ stats)
        found: dict[str, list[float]] = {m: [] for m in self.metrics}
        positions = np.arange(weights.shape[1])
        for row in weights:
            scores = self.score(np.repeat(positions, row.astype(int)))
            for m in self.metrics:
                found[m].append(float(scores[m]))
        return {m: np.asarray(v) for m, v in found.items()}


def ratio(top: np.ndarray, bottom: np.ndarray) -> np.ndarray:
    """top / bottom, 0 where bottom is 0 (scikit-learn's and seqeval's zero_division=0)."""
    top, bottom = np.asarray(top, dtype=float), np.asarray(bottom, dtype=float)
    return np.divide(top, bottom, out=np.zeros(np.broadcast(top, bottom).shape), where=bottom != 0)


def subset(items: list, indices: Sequence[int] | None) -> list:
    return list(items) if indices is None else [items[i] for i in indices]


class Correlated(Scored):
    """Predicted numbers against gold ones, scored by Pearson and Spearman (classify's
    regression, embed's scored pairs). `score_fn(predictions, references)` is the task's metric."""

    metrics = ("pearson", "spearman")

    def __init__(self, predictions, references, score_fn):
        self.predictions = np.asarray(predictions, dtype=float).reshape(-1)
        self.gold = np.asarray(references, dtype=float).reshape(-1)
        self.score_fn = score_fn

    def __len__(self) -> int:
        return len(self.gold)

    def references(self) -> list:
        return self.gold.tolist()

    def score(self, indices=None) -> dict:
        if indices is None:
            return self.score_fn(self.predictions, self.gold)
        indices = np.asarray(indices, dtype=int)
        return self.score_fn(self.predictions[indices], self.gold[indices])

    def resampled(self, weights: np.ndarray) -> dict[str, np.ndarray]:
        """Pearson and Spearman of each resample, computed here (scipy) rather than through the
        metric module, which is slow to call a thousand times; the same formulas, 0 for a
        constant column as the module says."""
        from scipy.stats import pearsonr, rankdata

        found = {"pearson": [], "spearman": []}
        positions = np.arange(weights.shape[1])
        for row in np.asarray(weights):
            chosen = np.repeat(positions, row.astype(int))
            x, y = self.predictions[chosen], self.gold[chosen]
            varied = x.std() > 0 and y.std() > 0 and len(x) > 1
            found["pearson"].append(float(pearsonr(x, y)[0]) if varied else 0.0)
            found["spearman"].append(float(pearsonr(rankdata(x), rankdata(y))[0]) if varied else 0.0)
        return {k: np.asarray(v) for k, v in found.items()}
