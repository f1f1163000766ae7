"""The contrastive route of few-shot classification (SetFit's method, written for bertkit): tune the
encoder so that examples sharing a label have close sentence vectors (cosine-similarity loss over
pairs made from the labels, bertkit/tasks/embed/losses.py), then fit the classification head on
the tuned vectors by logistic regression, one-vs-rest for multi-label.

The vector is the unit-length mean of the tokens (the [CLS] vector for a sentence encoder whose
files say it pools that way): the vector a sentence encoder such as MiniLM was trained to give.
bertkit/core/pooled_head.py makes the model's head read it, and records that in config.json, so the
result is an ordinary classify bundle that predict, evaluate, explain, compare, export and serve
read as they read any other.
"""

from __future__ import annotations

import contextlib
import math
import time

import numpy as np

from bertkit.core.errors import BertkitError
from bertkit.core.pooled_head import head_name, use_pooling
from bertkit.core.progress import bar, console
from bertkit.core.sharding import is_main
from bertkit.tasks.classify.encoding import encode_texts, feature_rows
from bertkit.tasks.classify.label_pairs import label_sets, make_pairs
from bertkit.tasks.classify.labels import MULTI
from bertkit.tasks.embed.losses import pair_loss

FAR = 10.0  # the logit given to a label the training data never shows on (or always shows on)


def head_layer(model):
    """The last linear layer of the model's classification head (the one giving the logits)."""

    return model.get_submodule(head_name(model))


@contextlib.contextmanager
def head_inputs(layer, kept: list):
    """While open, every forward pass appends what `layer` reads to `kept`."""
    handle = layer.register_forward_pre_hook(lambda module, args: kept.append(args[0]))
    try:
        yield kept
    finally:
        handle.remove()


def fit(model, tokenizer, split, info: dict, settings, log_history: list) -> dict:
    """Tune `model` on pairs of `split`'s examples, then fit its head; returns what was done (for
    bertkit.json). `split`: the prepared training features (input ids and encoded labels);
    `settings`: strategy.ContrastiveSettings."""
    import torch

    multi = info["problem_type"] == MULTI
    sets = label_sets(split["labels"], multi)
    pairs = make_pairs(sets, settings.pair_rounds, settings.seed)
    if not pairs:
        raise BertkitError(
            "classify.strategy: contrastive needs two examples of a label and one without it to make pairs; "
            "the training data has none. Add examples, or use classify.strategy: finetune"
        )
    rows = feature_rows({k: split[k] for k in split.column_names if k != "labels"})
    use_pooling(model, settings.pooling)
    layer = head_layer(model)
    started = time.perf_counter()
    frozen = not moves_vectors(model, tokenizer, rows[0], layer)
    losses = [] if frozen else tune(model, tokenizer, rows, pairs, layer, settings, log_history)
    tuned = time.perf_counter() - started
    vectors = encode(model, tokenizer, rows, layer, settings.batch_size)
    if not np.isfinite(vectors).all():  # the last step can break the weights after its loss was checked
        raise BertkitError(
            "classify.strategy: contrastive: the tuned encoder gives vectors that are not finite numbers; lower "
            "classify.contrastive_learning_rate"
        )
    fit_head(layer, vectors, split["labels"], len(info["labels"]), multi, settings.head_c, settings.seed)
    torch.cuda.empty_cache() if torch.cuda.is_available() else None
    done = {
        "strategy": "contrastive",
        "pooling": settings.pooling,
        "pairs": 0 if frozen else len(pairs),
        "pair_rounds": settings.pair_rounds,
        "steps": len(losses),
        "learning_rate": settings.learning_rate,
        "precision": "fp32",  # the pairs are tuned in fp32 whatever train.precision says
        "tune_seconds": round(tuned, 1),
        "head": "logistic regression" + (", one-vs-rest" if multi else ""),
    }
    if frozen:
        return {**done, "frozen": True}
    tenth = max(1, len(losses) // 10)
    # the pair loss over the first and the last tenth of the steps: did the tuning move the vectors
    return {
        **done,
        "pair_loss_first": round(float(np.mean(losses[:tenth])), 4),
        "pair_loss_last": round(float(np.mean(losses[-tenth:])), 4),
    }


def moves_vectors(model, tokenizer, row: dict, layer) -> bool:
    """Whether tuning can change the sentence vectors: not when the freezing keys hold every part of
    the encoder that makes them (its head is then fitted on the frozen vectors, and that is said)."""
    import torch

    device, training = next(model.parameters()).device, model.training
    model.eval()  # no dropout: the probe draws nothing from the random state the tuning then uses
    with torch.enable_grad(), head_inputs(layer, []) as kept:
        model(**_padded(tokenizer, [row], device))
    model.train(training)
    if kept[0].requires_grad:
        return True

    if is_main():
        console.print(
            "contrastive tuning: skipped, the encoder is frozen (train.freeze_embeddings and train.freeze_layers "
            "hold every layer): the head is fitted on the untuned sentence vectors"
        )
    return False


def tune(model, tokenizer, rows: list[dict], pairs: list, layer, settings, log_history: list) -> list[float]:
    """One pass over the pairs in shuffled batches (at most train.max_steps): the cosine of each
    pair's two vectors pulled towards its target (1 or 0) by mean squared error, AdamW with a
    linear warm-up (a tenth) and decay. Returns the loss of each step."""
    import torch

    device = next(model.parameters()).device
    generator = torch.Generator().manual_seed(settings.seed)
    order = torch.randperm(len(pairs), generator=generator).tolist()
    batches = [order[i : i + settings.batch_size] for i in range(0, len(order), settings.batch_size)]
    batches = batches[: settings.max_steps] if settings.max_steps else batches
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.learning_rate, weight_decay=0.0)
    warmup = max(1, math.ceil(0.1 * len(batches)))

    def rate(step: int) -> float:
        return (step + 1) / warmup if step < warmup else max(0.0, (len(batches) - step) / (len(batches) - warmup + 1))

    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, rate)
    model.train()
    losses = []
    every = settings.logging_steps
    with _steps_shown(len(pairs), len(batches), settings) as advance:
        for step, batch in enumerate(batches):
            losses.append(_step(model, tokenizer, rows, [pairs[k] for k in batch], layer, step, device))
            try:
                optimizer.step()
            except RuntimeError as err:  # a rate so large that AdamW's arithmetic overflows
                if "overflow" not in str(err):
                    raise
                raise BertkitError(
                    f"classify.strategy: contrastive: the update at step {step + 1} overflowed; lower "
                    "classify.contrastive_learning_rate"
                ) from None
            schedule.step()
            optimizer.zero_grad(set_to_none=True)
            if (step + 1) % every == 0 or step + 1 == len(batches):
                # the mean over the steps since the last entry, as the Trainer logs its loss: one
                # batch of pairs is too noisy to show a trend
                recent = losses[-((step % every) + 1) :]
                log_history.append({"step": step + 1, "loss": round(float(np.mean(recent)), 6), "contrastive": True})
            advance()
    model.eval()
    return losses


@contextlib.contextmanager
def _steps_shown(pairs: int, steps: int, settings):
    """The route's own settings said once, and a bar over its steps (the main process only)."""

    if not is_main():
        yield lambda: None
        return
    console.print(
        f"contrastive tuning: {pairs:,} pairs, {steps:,} steps, learning rate {settings.learning_rate:g}, "
        f"sentence vector: {settings.pooling} pooling"
    )
    with bar("tuning on pairs", total=steps) as progress:
        yield lambda: progress.advance(progress.task_ids[0])


def _step(model, tokenizer, rows: list[dict], batch: list, layer, step: int, device) -> float:
    """One batch of pairs: forward both sides, the pair loss, backward; returns the loss."""
    import torch


    first = [rows[i] for i, _, _ in batch]
    second = [rows[j] for _, j, _ in batch]
    targets = torch.tensor([target for _, _, target in batch], device=device)
    with head_inputs(layer, []) as kept:
        model(**_padded(tokenizer, first + second, device))
    vectors = kept[0]
    loss = pair_loss("cosine", vectors[: len(batch)], vectors[len(batch) :], targets, None, 1.0)
    if not torch.isfinite(loss):
        raise BertkitError(
            f"classify.strategy: contrastive: the pair loss stopped being finite at step {step + 1}; "
            "lower classify.contrastive_learning_rate"
        )
    loss.backward()
    return float(loss.detach())


def encode(model, tokenizer, rows: list[dict], layer, batch_size: int) -> np.ndarray:
    """The head's input vector for each row, the model in eval mode (no dropout)."""
    import torch

    device = next(model.parameters()).device
    model.eval()
    out = []
    with torch.no_grad():
        for i in range(0, len(rows), batch_size):
            with head_inputs(layer, []) as kept:
                model(**_padded(tokenizer, rows[i : i + batch_size], device))
            out.append(kept[0].float().cpu().numpy())
    return np.concatenate(out)


def vectors_of(model, tokenizer, split, info: dict, batch_size: int = 32) -> np.ndarray:
    """The head's input vectors of a raw split's texts (for benchmarks and tests)."""
    rows = feature_rows(encode_texts(tokenizer, split, info))
    return encode(model, tokenizer, rows, head_layer(model), batch_size)


def fit_head(layer, vectors: np.ndarray, labels: list, n_labels: int, multi: bool, c: float, seed: int) -> None:
    """Logistic regression on the vectors, written into the head's last layer: softmax over the
    labels for single-label (two labels: one logistic, split as ±z/2 so softmax gives it back), one
    logistic per label for multi-label, its examples on and off weighed to balance (the model's
    sigmoid reads it as it is, at the model's threshold)."""
    import torch

    weight = np.zeros((n_labels, vectors.shape[1]))
    bias = np.zeros(n_labels)
    if multi:
        matrix = np.asarray(labels, dtype=float).reshape(len(vectors), n_labels)
        for k in range(n_labels):
            weight[k], bias[k] = _logistic(vectors, matrix[:, k].astype(int), c, seed, balanced=True)
    else:
        targets = np.asarray(labels, dtype=int)
        present = np.unique(targets)
        bias[:] = -FAR
        if len(present) == 2:
            w, b = _logistic(vectors, (targets == present[1]).astype(int), c, seed)
            weight[present[0]], bias[present[0]] = -w / 2, -b / 2
            weight[present[1]], bias[present[1]] = w / 2, b / 2
        else:
            from sklearn.linear_model import LogisticRegression

            model = LogisticRegression(C=c, max_iter=1000, random_state=seed).fit(vectors, targets)
            weight[model.classes_], bias[model.classes_] = model.coef_, model.intercept_
    with torch.no_grad():
        layer.weight.copy_(torch.as_tensor(weight, dtype=layer.weight.dtype))
        if layer.bias is not None:
            layer.bias.copy_(torch.as_tensor(bias, dtype=layer.bias.dtype))


def _logistic(
    vectors: np.ndarray, on: np.ndarray, c: float, seed: int, balanced: bool = False
) -> tuple[np.ndarray, float]:
    """Weights and bias of one logistic regression; a label always off (or on) gets a bias far below
    (or above) zero and no weights. `balanced`: the examples on and off weigh the same in all (a
    multi-label head's labels are each on in a few examples only: unweighted, the regularisation
    on unit-length vectors kept a rare label's probability under 0.5 even where the vectors
    separate it, and the 0.5 threshold then never predicted it)."""
    if on.min() == on.max():
        return np.zeros(vectors.shape[1]), FAR if on[0] else -FAR
    from sklearn.linear_model import LogisticRegression

    weights = "balanced" if balanced else None
    model = LogisticRegression(C=c, max_iter=1000, random_state=seed, class_weight=weights).fit(vectors, on)
    return model.coef_[0], float(model.intercept_[0])


def _padded(tokenizer, rows: list[dict], device) -> dict:
    batch = tokenizer.pad(rows, return_tensors="pt")
    return {k: v.to(device) for k, v in batch.items()}
