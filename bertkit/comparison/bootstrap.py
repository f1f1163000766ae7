"""The statistics of `bertkit compare`: a paired bootstrap over examples (the same resamples for
every model), percentile intervals, and a test per pair of models and metric.

- Intervals: in each of N rounds, n examples are drawn with replacement from the n scored; each
  model's metrics are computed on that draw; the 2.5th and 97.5th percentiles of a metric over
  the rounds are its 95% interval.
- A difference between two models on the metric that counts right answers example by example
  (accuracy, exact match): McNemar's exact test, a two-sided binomial test on the examples only
  one of the two got right (scipy's `binomtest`; exact at any count, so no chi-square
  approximation is needed).
- Any other metric (F1, precision, correlation, ...): the paired bootstrap. The difference is
  computed in every round on the same draw for both models; its p-value is twice the share of
  rounds in which it is zero or has the opposite sign to the observed difference (capped at 1;
  1 when the observed difference is 0), and its 95% interval is the percentile one.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

LEVEL = 0.95
ALPHA = 0.05
CELLS_PER_CHUNK = 4_000_000  # rounds x examples drawn at once: 32 MB of indices, 32 MB of counts


def weights(n: int, rounds: int, seed: int) -> Iterator[np.ndarray]:
    """The resamples, in chunks of rounds: `chunk[r, i]` is how often example i is drawn in
    round r (each row sums to n). The same `n`, `rounds` and `seed` give the same draws."""
    rng = np.random.default_rng(seed)
    per_chunk = max(1, CELLS_PER_CHUNK // max(n, 1))
    done = 0
    while done < rounds:
        size = min(per_chunk, rounds - done)
        drawn = rng.integers(0, n, size=(size, n))
        drawn += (np.arange(size) * n)[:, None]
        yield np.bincount(drawn.ravel(), minlength=size * n).reshape(size, n).astype(float)
        done += size


def resample_all(scored: dict, rounds: int, seed: int) -> dict[str, dict[str, np.ndarray]]:
    """{model: {metric: its value in each round}}, every model on the same draws."""
    n = len(next(iter(scored.values())))
    found: dict[str, dict[str, list]] = {name: {} for name in scored}
    for chunk in weights(n, rounds, seed):
        for name, results in scored.items():
            for metric, values in results.resampled(chunk).items():
                found[name].setdefault(metric, []).append(np.asarray(values, dtype=float))
    return {name: {m: np.concatenate(v) for m, v in metrics.items()} for name, metrics in found.items()}


def interval(values: np.ndarray) -> tuple[float, float]:
    """The 95% percentile interval of bootstrap values."""
    tail = 100 * (1 - LEVEL) / 2
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


def bootstrap_p(observed: float, differences: np.ndarray) -> float:
    """Two-sided p-value of an observed difference from its bootstrap values: twice the share of
    rounds where the difference is zero or of the other sign (at most 1)."""
    if observed == 0:
        return 1.0
    other = differences <= 0 if observed > 0 else differences >= 0
    return float(min(1.0, 2 * np.mean(other)))


def mcnemar(first: np.ndarray, second: np.ndarray) -> tuple[float, int, int]:
    """McNemar's exact test on per-example 0/1 results of two models on the same examples:
    (p-value, examples only the first got right, examples only the second got right)."""
    from scipy.stats import binomtest

    first, second = np.asarray(first, dtype=bool), np.asarray(second, dtype=bool)
    only_first, only_second = int((first & ~second).sum()), int((~first & second).sum())
    if only_first + only_second == 0:
        return 1.0, 0, 0
    p = binomtest(only_first, only_first + only_second, 0.5, alternative="two-sided").pvalue
    return float(p), only_first, only_second


def pair_tests(names: list[str], scored: dict, points: dict, rounds: dict, metrics: list[str]) -> list[dict]:
    """For each pair of models (a before b, in the given order) and each metric: the difference
    a - b, its 95% interval, the test, its p-value and whether it is significant at 5%."""
    pairs = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            for metric in metrics:
                difference = points[a][metric] - points[b][metric]
                spread = rounds[a][metric] - rounds[b][metric]
                row = {"a": a, "b": b, "metric": metric, "difference": float(difference), "ci": list(interval(spread))}
                paired = scored[a].paired
                if metric == paired and scored[a].correct() is not None and scored[b].correct() is not None:
                    p, only_a, only_b = mcnemar(scored[a].correct(), scored[b].correct())
                    row.update(test="mcnemar", p_value=p, only_a=only_a, only_b=only_b)
                else:
                    row.update(test="paired bootstrap", p_value=bootstrap_p(difference, spread))
                row["significant"] = bool(row["p_value"] < ALPHA)
                pairs.append(row)
    return pairs
