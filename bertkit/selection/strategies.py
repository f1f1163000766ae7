"""How unsure a model is of a text, and which texts to pick (active learning's query strategies).

Each text comes with rows of probabilities (a task's `Selection.probability_rows`); a row's
uncertainty is

- least-confidence: 1 - the highest probability;
- margin: 1 - (the highest - the second highest): a near tie between two classes;
- entropy: -sum p log p over the classes;

and a text's is the sum over its rows (one row for a single-label text, a row per label for
multi-label, a row per word for NER). `margin-clusters` spreads the picks out: the pool's sentence
vectors are cut into N k-means clusters and each cluster gives its most unsure text by margin
(so the picks are not N near-copies of one confusing kind of text). `random` is the baseline every
strategy is measured against (bench/active_learning.py).
"""

from __future__ import annotations

import numpy as np

STRATEGIES = ("margin-clusters", "margin", "least-confidence", "entropy", "random")
# the best median accuracy in bench/active_learning.py (SST-2, MiniLM's few-shot route, 3 seeds), though
# within the seeds' noise of random picks (docs/benchmarks.md, "Choosing what to label")
DEFAULT_STRATEGY = "margin-clusters"
CLUSTERED = "margin-clusters"


def row_uncertainty(rows: np.ndarray, strategy: str) -> float:
    """The summed uncertainty of one text's `rows` (rows × classes) under `strategy`."""
    if rows.size == 0:
        return 0.0
    ordered = np.sort(rows, axis=1)
    if strategy == "least-confidence":
        return float((1 - ordered[:, -1]).sum())
    if strategy == "entropy":
        p = np.clip(rows, 1e-12, 1.0)
        return float(-(rows * np.log(p)).sum())
    return float((1 - (ordered[:, -1] - ordered[:, -2])).sum())  # margin, and margin among clusters


def uncertainties(rows: list[np.ndarray], strategy: str) -> np.ndarray:
    measure = "margin" if strategy in (CLUSTERED, "random") else strategy
    return np.array([row_uncertainty(np.asarray(r, dtype=np.float64), measure) for r in rows])


def pick(uncertain: np.ndarray, n: int, strategy: str, vectors: np.ndarray | None = None, seed: int = 0) -> list[int]:
    """The positions of the `n` texts to label, the most unsure first (random: in drawn order)."""
    n = min(n, len(uncertain))
    if strategy == "random":
        return np.random.default_rng(seed).choice(len(uncertain), size=n, replace=False).tolist()
    if strategy == CLUSTERED and vectors is not None and n < len(uncertain):
        from sklearn.cluster import KMeans

        clusters = KMeans(n_clusters=n, n_init=3, random_state=seed).fit_predict(vectors)
        chosen = []
        for cluster in range(n):
            members = np.flatnonzero(clusters == cluster)
            if len(members):  # the cluster's most unsure text (the first of a tie)
                chosen.append(int(members[np.argmax(uncertain[members])]))
        return sorted(chosen, key=lambda i: (-uncertain[i], i))
    return sorted(range(len(uncertain)), key=lambda i: (-uncertain[i], i))[:n]
