"""Losses for imbalanced labels, shared by classify and ner: class weights (per class, per tag, or
per label as BCE's positive weight) and focal loss, as the Trainer's `compute_loss_func`.

Reduction. The Trainer (transformers 5) treats a `compute_loss_func`'s loss as already scaled
for gradient accumulation: it does not divide it by the accumulation steps, and it passes
`num_items_in_batch`, the count of labels that are not -100 over all the micro-batches of one
optimizer step. So every loss here is a sum over the micro-batch's items divided by that count;
the micro-batches of a step then add up to the mean over the whole step, as without
accumulation. A weighted item counts its weight in the sum and 1 in the count (as Keras'
`class_weight`, and unlike PyTorch's weighted mean, which divides by the batch's weights and so
cancels the weights in a batch of one class). Balanced weights average 1 over the training data,
so the loss keeps the unweighted loss's scale. Without `num_items_in_batch` (a direct call), the
count is the micro-batch's own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bertkit.core.errors import BertkitError

CROSS_ENTROPY, FOCAL = "cross_entropy", "focal"
# Lin et al. (2017), "Focal Loss for Dense Object Detection": gamma 2 was the best of 0-5 on COCO,
# and it is the default of torchvision's sigmoid_focal_loss; gamma 0 is plain cross-entropy.
DEFAULT_GAMMA = 2.0
IGNORE = -100  # label of positions that are no prediction target (sub-words, special tokens)


def balanced(counts: Sequence[float]) -> list[float]:
    """Inverse frequency, n / (k * count) for the k classes that occur, 0 for one that does not
    (it is never a target): every training item's weight then averages 1."""
    total = float(sum(counts))
    seen = sum(1 for c in counts if c)
    return [total / (seen * c) if c else 0.0 for c in counts]


def balanced_positive(positives: Sequence[float], total: int) -> list[float]:
    """Multi-label positive weights: negatives / positives of each label; 1 for a label that is
    always or never on in the training data (no balance to restore)."""
    return [(total - p) / p if 0 < p < total else 1.0 for p in positives]


def resolve(spec, names: Sequence[str], key: str, what: str = "label", groups: Mapping | None = None) -> list[float]:
    """Weights for `names` from a config value: a list in the order of `names`, or a mapping by
    name (names left out weigh 1; `groups` maps other keys, such as entity types, to several
    names). `key` is the config key the errors name."""
    if isinstance(spec, Mapping):
        weights = [1.0] * len(names)
        index = {name: i for i, name in enumerate(names)}
        groups = groups or {}
        for name, weight in spec.items():
            if str(name) in index:
                weights[index[str(name)]] = float(weight)
            elif str(name) in groups:
                for member in groups[str(name)]:
                    weights[index[member]] = float(weight)
            else:
                known = ", ".join(names) + (f" (or a type: {', '.join(groups)})" if groups else "")
                raise BertkitError(f"{key}: unknown {what} '{name}'; the {what}s are {known}")
    else:
        weights = [float(w) for w in spec]
        if len(weights) != len(names):
            raise BertkitError(
                f"{key}: {len(weights)} weights for {len(names)} {what}s; a list gives one weight per {what}, "
                f"in this order: {', '.join(names)} (or give a mapping {{{what}: weight}})"
            )
    if any(w < 0 for w in weights) or not any(weights):
        raise BertkitError(f"{key}: weights must be 0 or more, and not all 0 (got {weights})")
    return weights


def step_share(labels, num_items_in_batch):
    """The share of an optimizer step's items that this micro-batch holds: the factor that turns
    a micro-batch's mean loss into what the Trainer expects of a compute_loss_func (its
    micro-batches add up to the step's mean). 1 without `num_items_in_batch` (a direct call)."""
    if num_items_in_batch is None:
        return 1.0
    return labels.ne(IGNORE).sum() / num_items_in_batch


def _count(labels, num_items_in_batch):
    if num_items_in_batch is not None:
        return num_items_in_batch
    return labels.ne(IGNORE).sum().clamp(min=1)


def softmax_loss(logits, labels, weights=None, gamma: float = 0.0, num_items_in_batch=None):
    """Cross-entropy over the last axis of `logits` (classes), skipping labels that are -100;
    each item times `weights[label]` and, with gamma > 0, the focal factor (1 - p)^gamma."""
    import torch

    logits = logits.float().reshape(-1, logits.size(-1))
    labels = labels.reshape(-1)
    keep = labels.ne(IGNORE)
    targets = torch.where(keep, labels, torch.zeros_like(labels)).long()
    log_p = torch.log_softmax(logits, dim=-1).gather(1, targets[:, None]).squeeze(1)
    item = -log_p
    if gamma:
        item = item * (1 - log_p.exp()).clamp(min=0) ** gamma
    if weights is not None:
        item = item * weights.to(logits.device)[targets]
    return (item * keep).sum() / _count(labels, num_items_in_batch)


def sigmoid_loss(logits, labels, pos_weight=None, gamma: float = 0.0, num_items_in_batch=None):
    """Binary cross-entropy per label (multi-label), the positive term times `pos_weight[label]`
    and, with gamma > 0, the focal factor (1 - p_t)^gamma where p_t is the probability of the
    true value."""
    import torch.nn.functional as F

    logits = logits.float()
    labels = labels.to(logits.dtype)
    weight = pos_weight.to(logits.device) if pos_weight is not None else None
    item = F.binary_cross_entropy_with_logits(logits, labels, pos_weight=weight, reduction="none")
    if gamma:
        p = logits.sigmoid()
        p_true = labels * p + (1 - labels) * (1 - p)
        item = item * (1 - p_true).clamp(min=0) ** gamma
    return item.sum() / _count(labels, num_items_in_batch)


def loss_function(
    kind: str, gamma: float, weights: list[float] | None, names: Sequence[str], spec=None, multi_label: bool = False
):
    """The Trainer's `compute_loss_func(outputs, labels, num_items_in_batch=None)`; its `settings`
    attribute is what the bundle records: the loss, gamma, and the weights as used, by name."""
    import torch

    tensor = torch.tensor(weights, dtype=torch.float) if weights is not None else None
    base = sigmoid_loss if multi_label else softmax_loss
    used = gamma if kind == FOCAL else 0.0

    def compute(outputs, labels, num_items_in_batch=None):
        logits = outputs["logits"] if isinstance(outputs, Mapping) else outputs.logits
        return base(logits, labels, tensor, used, num_items_in_batch)

    described: dict = {"loss": kind}
    if kind == FOCAL:
        described["focal_gamma"] = gamma
    if weights is not None:
        described["class_weights"] = spec if isinstance(spec, str) else "given"
        what = "positive_weights" if multi_label else "weights"
        described[what] = {name: round(w, 6) for name, w in zip(names, weights, strict=True)}
    compute.settings = described
    return compute
