"""Masked-LM scores: the loss of the true token and whether it ranked first at each masked
position (`token_losses` while training, `losses_of_rows` from a PyTorch or ONNX model's output at
evaluation), summed up into loss, perplexity and accuracy (`score`, `score_rows`)."""

from __future__ import annotations

import numpy as np

from bertkit.core import metrics
from bertkit.core.inference import to_numpy
from bertkit.tasks.mlm import sentence_pairs
from bertkit.tasks.mlm.masking import IGNORE


def token_losses(logits, labels):
    import torch

    flat = torch.nn.functional.cross_entropy(
        logits.float().reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=IGNORE, reduction="none"
    ).reshape(labels.shape)
    correct = (logits.argmax(-1) == labels).float()
    return torch.stack([flat, correct], -1)


def score(predictions, labels) -> dict:
    """Masked-LM metrics from `token_losses` rows and labels (IGNORE where nothing is predicted);
    with next-sentence logits and labels beside them (mlm.nsp), their accuracy too. The loss and
    perplexity are the masked LM's alone, not the summed loss the model trains on."""
    if isinstance(predictions, tuple | list):
        nsp = sentence_pairs.nsp_accuracy(predictions[1], labels[1])
        return {**score(predictions[0], labels[0]), "nsp_accuracy": nsp}
    predictions, labels = np.asarray(predictions), np.asarray(labels)
    width = min(predictions.shape[1], labels.shape[1])
    chosen = labels[:, :width] != IGNORE
    values = predictions[:, :width][chosen]
    return metrics.load("masked_lm").compute(nll=values[:, 0], correct=values[:, 1].astype(int))


def score_rows(rows: list) -> dict:
    values = np.concatenate([r for r in rows if len(r)]) if any(len(r) for r in rows) else np.zeros((0, 2))
    return metrics.load("masked_lm").compute(nll=values[:, 0], correct=values[:, 1].astype(int))


def losses_of_rows(out, inputs, rows) -> list:
    """(loss, correct) of each predicted position of each row of a batch (a PyTorch or an ONNX
    model's output: only the labelled positions' logits are taken out of it, then numpy)."""
    width = inputs["input_ids"].shape[1]
    labels = np.array([list(r["labels"]) + [IGNORE] * (width - len(r["labels"])) for r in rows])
    keep = labels != IGNORE
    logits = to_numpy(out.logits[mask_like(out.logits, keep)]).astype(np.float64)  # (positions, vocab)
    wanted = labels[keep]
    top = logits.max(-1, keepdims=True)
    log_norm = np.log(np.exp(logits - top).sum(-1)) + top[:, 0]
    losses = np.stack([log_norm - logits[np.arange(len(wanted)), wanted], logits.argmax(-1) == wanted], -1)
    counts = keep.sum(1)
    return np.split(losses.astype(np.float32), np.cumsum(counts)[:-1])


def mask_like(logits, mask: np.ndarray):
    """A numpy boolean mask as the kind of array `logits` is (a tensor on its device, or numpy)."""
    if isinstance(logits, np.ndarray):
        return mask
    import torch

    return torch.as_tensor(mask, device=logits.device)
