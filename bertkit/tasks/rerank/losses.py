"""The cross-encoder's losses and ranking scores.

Grouped rows: a listwise softmax cross-entropy over each query's [positive, negatives] scores
(the positive is the right "class" among its group), the loss rerankers are usually trained with
(e.g. sentence-transformers' CrossEncoder MultipleNegativesRankingLoss, Nogueira et al.'s
monoBERT with several negatives per query). Labelled pairs: binary cross-entropy of the score's
sigmoid against the label (scaled to 0..1).

Both are computed as a micro-batch mean times its share of the optimizer step's items
(`bertkit.core.losses.step_share`): the Trainer counts the step's labels that are not -100, which for
groups is the step's pairs, so a micro-batch's share is its share of pairs.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from bertkit.core.losses import IGNORE, step_share


def group_scores(logits, labels):
    """The flat per-pair scores laid out as the [B, G] label matrix, -inf where a group has no
    pair (works for torch tensors and numpy arrays alike: pairs fill each row from the left)."""
    present = labels != IGNORE
    if isinstance(logits, np.ndarray):
        scores = np.full(labels.shape, -np.inf, dtype=np.float64)
        scores[present] = logits.reshape(-1)
        return scores
    import torch

    scores = torch.full(labels.shape, float("-inf"), dtype=logits.dtype, device=logits.device)
    return scores.masked_scatter(present, logits.reshape(-1))


def listwise_loss(logits, labels, num_items_in_batch=None):
    """Cross-entropy of each group's positive (its first place) against the whole group."""
    import torch

    scores = group_scores(logits.float().reshape(-1), labels)
    target = torch.zeros(len(scores), dtype=torch.long, device=scores.device)
    return torch.nn.functional.cross_entropy(scores, target) * step_share(labels, num_items_in_batch)


def pointwise_loss(logits, labels, num_items_in_batch=None):
    """Binary cross-entropy of each pair's score against its label (0..1)."""
    import torch

    logits = logits.float().reshape(-1)
    item = torch.nn.functional.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))
    return item * step_share(labels, num_items_in_batch)


def loss_function(grouped: bool):
    """The Trainer's compute_loss_func for the rows' kind."""
    base = listwise_loss if grouped else pointwise_loss

    def compute(outputs, labels, num_items_in_batch=None):
        logits = outputs["logits"] if isinstance(outputs, Mapping) else outputs.logits
        return base(logits, labels, num_items_in_batch)

    compute.settings = {"loss": "listwise_softmax" if grouped else "binary_cross_entropy"}
    return compute


def group_ranks(scores: np.ndarray) -> np.ndarray:
    """The rank of each group's positive (column 0) among its group (1 = first; a tie with a
    negative counts against the positive, so an untrained constant scorer ranks last)."""
    return 1 + (scores[:, 1:] >= scores[:, :1]).sum(axis=1)


def pair_ranks(scores, labels, groups) -> np.ndarray:
    """Labelled pairs grouped by query: the rank of the best-scored relevant passage (label at
    least 0.5) among the query's irrelevant ones. Queries without both kinds are left out."""
    scores, labels, groups = np.asarray(scores, float), np.asarray(labels, float), np.asarray(groups)
    ranks = []
    for g in np.unique(groups):
        mine = groups == g
        good, bad = scores[mine & (labels >= 0.5)], scores[mine & (labels < 0.5)]
        if len(good) and len(bad):
            ranks.append(1 + int((bad >= good.max()).sum()))
    return np.asarray(ranks, dtype=int)
