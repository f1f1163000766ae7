"""The contrastive losses and the pair metrics: in-batch negatives (MultipleNegativesRanking, with
the batch's hard negatives when the data has them) for plain pairs, CoSENT for scored pairs, and
retrieval / correlation scores for validation.
"""

from __future__ import annotations

import numpy as np

from bertkit.core import metrics
from bertkit.core.pooling import l2_normalize, unit_rows
from bertkit.tasks.contract.scored import Correlated, Scored


def pair_loss(name: str, first, second, labels, groups, scale: float, negatives=None, negative_groups=None):
    import torch

    if name == "in_batch":
        return in_batch_loss(first, second, groups, scale, negatives, negative_groups)
    cosine = (l2_normalize(first) * l2_normalize(second)).sum(-1)
    if name == "cosine":
        return torch.nn.functional.mse_loss(cosine, labels.to(cosine.dtype))
    return cosent_loss(cosine, labels, scale)


def in_batch_loss(first, second, groups, scale: float, negatives=None, negative_groups=None):
    """Cross-entropy of each anchor's own positive against every other positive in the batch and
    every hard negative in the batch (MultipleNegativesRanking); other copies of the anchor's
    positive text, among the positives or the negatives, are left out rather than counted as
    negatives."""
    import torch

    candidates = second if negatives is None else torch.cat([second, negatives])
    logits = scale * (l2_normalize(first) @ l2_normalize(candidates).T)
    if groups is not None:
        their = groups if negatives is None else torch.cat([groups, negative_groups])
        same = groups[:, None] == their[None, :]
        same[:, : len(second)].fill_diagonal_(False)
        logits = logits.masked_fill(same, float("-inf"))
    return torch.nn.functional.cross_entropy(logits, torch.arange(len(first), device=first.device))


def cosent_loss(cosine, labels, scale: float):
    """CoSENT: every pair scored higher than another should have the higher cosine;
    log(1 + sum over such (i, j) of exp(scale * (cos_j - cos_i)))."""
    import torch

    diff = scale * (cosine[None, :] - cosine[:, None])  # [i, j] = cos_j - cos_i
    wanted = labels[:, None] > labels[None, :]
    diff = diff.masked_fill(~wanted, float("-inf"))
    zero = torch.zeros(1, device=cosine.device, dtype=diff.dtype)
    return torch.logsumexp(torch.cat([zero, diff.reshape(-1)]), dim=0)


def pair_metrics(first, second, labels, groups: list[int], scored: bool) -> dict:
    """Spearman / Pearson of cosine against the scores, or retrieval of each anchor's positive
    among all distinct positives."""
    return pair_results(first, second, labels, groups, scored).score()


def pair_results(first, second, labels, groups: list[int], scored: bool) -> Scored:
    """Per pair, the cosine of its two texts beside its gold score (`scored`), or the rank of each
    anchor's own positive among all distinct positives."""
    first, second = unit_rows(np.asarray(first, dtype=np.float32)), unit_rows(np.asarray(second, dtype=np.float32))
    if scored:
        cosine = (first * second).sum(axis=1)
        module = metrics.load("regression")
        return Correlated(cosine, labels, lambda p, r: module.compute(predictions=p, references=r))
    groups = np.asarray(groups)
    keys, where = np.unique(groups, return_index=True)
    corpus = second[where]  # one vector per distinct positive, in key order
    target = np.searchsorted(keys, groups)
    scores = first @ corpus.T
    own = scores[np.arange(len(first)), target]
    return Ranked(1 + (scores > own[:, None]).sum(axis=1))


class Ranked(Scored):
    """The rank of each query's right item (1 = first): recall at 1, 5, 10 and MRR are means of
    per-query numbers. The ranks are taken among all the file's positives, so a resample of
    queries keeps each query's rank as it is."""

    metrics = ("recall_at_1", "recall_at_5", "recall_at_10", "mrr")
    paired = "recall_at_1"

    def __init__(self, ranks):
        self.ranks = np.asarray(ranks, dtype=int)

    def __len__(self) -> int:
        return len(self.ranks)

    def references(self) -> list:
        return [len(self.ranks)]  # the gold pairs are the file's: only their number can differ

    def score(self, indices=None) -> dict:
        ranks = self.ranks if indices is None else self.ranks[np.asarray(indices, dtype=int)]
        return metrics.load("retrieval").compute(ranks=ranks)

    def correct(self) -> np.ndarray:
        return (self.ranks == 1).astype(int)

    def stats(self) -> np.ndarray:
        r = self.ranks.astype(float)
        return np.stack([np.ones_like(r), r <= 1, r <= 5, r <= 10, 1.0 / r], axis=1)

    def from_sums(self, sums: np.ndarray) -> dict[str, np.ndarray]:
        total, *rest = np.asarray(sums, dtype=float).T
        return {name: value / total for name, value in zip(self.metrics, rest, strict=True)}
