"""The distillation loss, one formula for every kind of output:

    loss = (1 - alpha) * soft + alpha * hard

- single-label classify and ner: soft = T^2 * KL(softmax(teacher / T) || softmax(student / T)),
  averaged over examples (ner: over the tokens the task predicts, the first sub-word of each
  word); hard = cross-entropy with the labels (ner: over the labelled tokens).
- multi-label classify: each label is a yes/no question, so the soft targets are
  sigmoid(teacher / T) and soft = T^2 * binary cross-entropy of sigmoid(student / T) against
  them, averaged over labels and examples; hard = binary cross-entropy with the 0/1 labels.
- regression: soft = mean squared error to the teacher's output (no temperature: there is no
  distribution to soften); hard = mean squared error to the label.

T^2 keeps the soft term's gradients the same size whatever the temperature (Hinton et al., 2015).
Examples without a label (data.unlabeled) take part in `soft` only; `hard` averages over the
labelled ones (0 in a batch without any).
"""

from __future__ import annotations

from bertkit.core.losses import IGNORE, sigmoid_loss, softmax_loss, step_share


def soft_loss(kind: str, student, teacher, temperature: float, mask=None):
    """The soft-target term for student and teacher logits of the same shape ([N, C], or
    [N, L, C] for ner with `mask` [N, L] saying which tokens count)."""
    import torch
    import torch.nn.functional as F

    if kind == "regression":
        return F.mse_loss(student.reshape(-1), teacher.reshape(-1).to(student.dtype))
    t = temperature
    if kind == "multi_label":
        target = torch.sigmoid(teacher / t)
        return t * t * F.binary_cross_entropy_with_logits(student / t, target.to(student.dtype))
    per_item = F.kl_div(
        F.log_softmax(student / t, dim=-1), F.log_softmax(teacher / t, dim=-1), log_target=True, reduction="none"
    ).sum(-1)
    if mask is not None:
        per_item = per_item[mask.bool()]
    if per_item.numel() == 0:
        return student.sum() * 0.0
    return t * t * per_item.mean()


def hard_loss(kind: str, student, labels, labelled=None):
    """The task's own loss on the examples that have labels (`labelled`: a 0/1 flag each; all
    when None). ner marks unlabelled tokens with -100 in `labels` instead."""
    import torch.nn.functional as F

    if kind == "ner":
        return softmax_loss(student, labels)  # a mean over the tagged tokens, 0 when there are none
    if labelled is not None:
        keep = labelled.bool()
        if not keep.any():
            return student.sum() * 0.0
        student, labels = student[keep], labels[keep]
    if kind == "single_label":
        return softmax_loss(student, labels)
    if kind == "multi_label":
        return sigmoid_loss(student, labels)
    return F.mse_loss(student.reshape(-1), labels.reshape(-1).to(student.dtype))


def distill_loss(kind: str, student, teacher, labels, temperature: float, alpha: float, labelled=None, mask=None):
    """(1 - alpha) * soft + alpha * hard, each term skipped when its weight is 0."""
    total = student.sum() * 0.0
    if alpha < 1:
        total = total + (1 - alpha) * soft_loss(kind, student, teacher, temperature, mask)
    if alpha > 0:
        total = total + alpha * hard_loss(kind, student, labels, labelled)
    return total


def trainer_loss(kind: str, train, temperature: float, alpha: float):
    """The Trainer's compute_loss_func. The training features carry, in place of their labels,
    their own row number (classify: the whole label; ner: the first position, a [CLS] that is
    never labelled), which picks the teacher's logits, the labels and the flags kept here. In
    evaluation (no gradients) the labels are the real ones, and the loss is the task's own.
    A micro-batch's mean loss is weighed by its share of the optimizer step's items
    (`losses.step_share`), as the Trainer expects of a compute_loss_func under gradient
    accumulation."""
    import torch

    teacher = [torch.tensor(row, dtype=torch.float32) for row in train[TEACHER_COLUMN]]
    gold = train[GOLD_COLUMN]
    labelled = torch.tensor(train[LABELLED_COLUMN], dtype=torch.float32)
    if kind != "ner":
        teacher_rows = torch.stack(teacher)
        gold_rows = torch.tensor(gold)

    def compute(outputs, labels, num_items_in_batch=None):
        logits = outputs.logits
        if not torch.is_grad_enabled():
            return hard_loss(kind, logits, labels)
        return step_share(labels, num_items_in_batch) * micro_batch_loss(logits, labels)

    def micro_batch_loss(logits, labels):
        device = logits.device
        if kind != "ner":
            rows = labels.reshape(-1).long().cpu()
            return distill_loss(
                kind,
                logits,
                teacher_rows[rows].to(device),
                gold_rows[rows].to(device),
                temperature,
                alpha,
                labelled[rows].to(device),
            )
        rows = labels[:, 0].long().cpu()
        width = logits.size(1)
        targets = torch.zeros(logits.shape, dtype=torch.float32)
        mask = torch.zeros(logits.shape[:2], dtype=torch.bool)
        token_labels = torch.full(logits.shape[:2], IGNORE, dtype=torch.long)
        for b, row in enumerate(rows.tolist()):
            n = min(width, teacher[row].size(0))
            targets[b, :n] = teacher[row][:n]
            positions = torch.tensor(gold[row][:n])
            mask[b, :n] = positions != IGNORE
            if labelled[row]:
                token_labels[b, :n] = positions
        return distill_loss(
            kind, logits, targets.to(device), token_labels.to(device), temperature, alpha, mask=mask.to(device)
        )

    return compute


TEACHER_COLUMN = "distill_teacher_logits"
GOLD_COLUMN = "distill_gold"  # the labels as prepared (ner: -100 at positions the task never predicts)
LABELLED_COLUMN = "distill_labelled"
