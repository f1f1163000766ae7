"""Attributions of a model's score to the tokens of one input.

Both methods work on the output of the model's word-embedding layer, replaced through a forward
hook, so the model is run as it is (position and segment embeddings, attention mask and every
model family's own way of numbering positions untouched).

Integrated gradients (Sundararajan et al., 2017): the path from the baseline's embeddings x' to
the input's x, attribution_i = sum over the embedding's dimensions of
(x_i - x'_i) * mean over the path of d score / d x_i. The mean is a Gauss-Legendre quadrature of
`steps` points, exact for polynomials of degree 2 * steps - 1, so the attributions sum to
score(x) - score(x') up to the quadrature's error (`completeness_error`).

Occlusion: each word's embeddings (all its pieces) replaced by the baseline's, one pass per word;
the attribution is the score's drop.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from bertkit.tasks.contract.explaining import Target


def target_scores(output, targets: list[Target]):
    """(batch, targets) scores of a batch's model output."""
    import torch

    columns = []
    for target in targets:
        total = 0
        for name, position, column in target.terms:
            values = getattr(output, name)
            if position is not None:
                values = values[:, position]
            if column is not None:
                values = values[:, column]
            total = total + values.float()
        columns.append(total)
    return torch.stack(columns, -1)


def gauss_legendre(steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Points in [0, 1] and weights (summing to 1) of the `steps`-point Gauss-Legendre rule."""
    points, weights = np.polynomial.legendre.leggauss(steps)
    return (points + 1) / 2, weights / 2


@contextlib.contextmanager
def replaced_embeddings(model):
    """While inside, the word-embedding layer returns `slot["embeds"]` instead of its own output."""
    slot: dict = {}
    handle = model.get_input_embeddings().register_forward_hook(lambda module, args, output: slot["embeds"])
    try:
        yield slot
    finally:
        handle.remove()


def _embeddings(model, inputs: dict, baseline_ids):
    import torch

    layer = model.get_input_embeddings()
    with torch.no_grad():
        return layer(inputs["input_ids"]).float(), layer(baseline_ids).float()


def _run(model, inputs: dict, embeds, targets: list[Target], slot: dict):
    slot["embeds"] = embeds.to(model.dtype)
    batch = {k: v.expand(len(embeds), -1) for k, v in inputs.items()}
    return target_scores(model(**batch), targets)


def integrated_gradients(model, inputs: dict, baseline_ids, targets: list[Target], steps: int, batch_size: int):
    """(attributions (targets, tokens), scores at the input (targets), scores at the baseline).

    `inputs` are one input's tensors (batch of 1) on the model's device; `baseline_ids` its
    input_ids with the words replaced by the baseline token."""
    import torch

    x, x0 = _embeddings(model, inputs, baseline_ids)
    delta = x - x0
    alphas, weights = gauss_legendre(steps)
    total = torch.zeros((len(targets), *x.shape[1:]), device=x.device)
    with replaced_embeddings(model) as slot:
        with torch.no_grad():
            ends = _run(model, inputs, torch.cat([x, x0]), targets, slot).cpu().numpy()
        for start in range(0, steps, batch_size):
            a = torch.tensor(alphas[start : start + batch_size], dtype=torch.float32, device=x.device)
            w = torch.tensor(weights[start : start + batch_size], dtype=torch.float32, device=x.device)
            path = (x0 + a[:, None, None] * delta).detach().requires_grad_(True)
            with torch.enable_grad():
                scores = _run(model, inputs, path, targets, slot)
                for t in range(len(targets)):
                    (grad,) = torch.autograd.grad(scores[:, t].sum(), path, retain_graph=t < len(targets) - 1)
                    total[t] += (grad.float() * w[:, None, None]).sum(0)
    attributions = (total * delta[0]).sum(-1)
    return attributions.detach().cpu().numpy().astype(np.float64), ends[0], ends[1]


def occlusion(model, inputs: dict, baseline_ids, targets: list[Target], groups: list[list[int]], batch_size: int):
    """(attributions (targets, tokens), scores at the input): the drop of each score when a group's
    embeddings are the baseline's, shared out evenly over the group's tokens."""
    import torch

    x, x0 = _embeddings(model, inputs, baseline_ids)
    occluded = []
    for group in groups:
        row = x.clone()
        row[0, group] = x0[0, group]
        occluded.append(row)
    drops = []
    with replaced_embeddings(model) as slot, torch.no_grad():
        score, base = _run(model, inputs, torch.cat([x, x0]), targets, slot).cpu().numpy()
        for start in range(0, len(occluded), batch_size):
            found = _run(model, inputs, torch.cat(occluded[start : start + batch_size]), targets, slot)
            drops += list(score[None, :] - found.cpu().numpy())
    attributions = np.zeros((len(targets), x.shape[1]))
    for group, drop in zip(groups, drops, strict=True):
        attributions[:, group] = drop[:, None] / len(group)
    return attributions, score.astype(np.float64), base.astype(np.float64)
