"""Text pairs as training features: both texts tokenized side by side (and each pair's hard
negatives, when there are some), batches padded per side, and one trainable module that encodes
them all with shared weights.
"""

from __future__ import annotations

from bertkit.core import data as data_mod
from bertkit.core.models import checkpoint_activations
from bertkit.core.pooling import pool
from bertkit.tasks.embed.losses import pair_loss
from bertkit.tasks.embed.negatives import NEGATIVE, negative_texts

PAIR = "pair_"  # prefix of the second text's model inputs


def pair_features(tokenizer, split, info: dict, role: str) -> dict:
    first = tokenizer(
        [plain_text(t) for t in split[info["text_column"]]], truncation=True, max_length=info["max_length"]
    )
    seconds = [plain_text(t) for t in split[info["text_pair_column"]]]
    second = tokenizer(seconds, truncation=True, max_length=info["pair_max_length"])
    columns = {**dict(first), **{PAIR + k: v for k, v in second.items()}}
    if info["scored"]:
        places = data_mod.places(split, role)
        columns["labels"] = [s / info["score_max"] for s in scores_of(split[info["label_column"]], places)]
    else:
        columns["labels"] = [1.0] * len(seconds)
    seen: dict[str, int] = {}
    columns["pair_group"] = group_ids(seconds, seen)
    if info.get("negative_columns") and role == "train":  # validation ranks the positives only
        negatives = negative_texts(split, info["negative_columns"], data_mod.places(split, role))
        columns.update(negative_features(tokenizer, negatives, info["pair_max_length"], seen))
    return columns


def negative_features(tokenizer, negatives: list[list[str]], max_length: int, seen: dict[str, int]) -> dict:
    """Each row's negatives tokenized (a list per row) with their group numbers, shared with the
    positives' (`seen`), so that a negative equal to a positive text is known as such."""
    flat = [t for row in negatives for t in row]
    encoded = tokenizer(flat, truncation=True, max_length=max_length) if flat else {}
    groups = group_ids(flat, seen)
    columns: dict[str, list] = {NEGATIVE + k: [] for k in encoded}
    columns[NEGATIVE + "group"] = []
    start = 0
    for row in negatives:
        end = start + len(row)
        for key, values in encoded.items():
            columns[NEGATIVE + key].append(values[start:end])
        columns[NEGATIVE + "group"].append(groups[start:end])
        start = end
    return columns


def group_ids(texts: list[str], seen: dict[str, int] | None = None) -> list[int]:
    """The same number for equal texts (in order of first appearance; `seen` carries the numbers
    given so far from one call to the next)."""
    seen = {} if seen is None else seen
    return [seen.setdefault(t, len(seen)) for t in texts]


def scores_of(values, where: str | list[str]) -> list[float]:
    return data_mod.as_numbers(values, where, "score")


class PairCollator:
    """Pads each side of a batch of pairs on its own; scores and pair groups become tensors."""

    def __init__(self, tokenizer, pad_to_multiple_of=None):
        self.tokenizer, self.multiple = tokenizer, pad_to_multiple_of

    def __call__(self, features: list[dict]) -> dict:
        import torch

        names = [n for n in self.tokenizer.model_input_names if n in features[0]]
        batch = dict(self._pad([{n: f[n] for n in names} for f in features]))
        second = self._pad([{n: f[PAIR + n] for n in names} for f in features])
        batch.update({PAIR + k: v for k, v in second.items()})
        batch["labels"] = torch.tensor([float(f["labels"]) for f in features])
        if "pair_group" in features[0]:
            batch["pair_group"] = torch.tensor([int(f["pair_group"]) for f in features])
        negatives = [
            {n: f[NEGATIVE + n][j] for n in names}
            for f in features
            if NEGATIVE + "input_ids" in f
            for j in range(len(f[NEGATIVE + "input_ids"]))
        ]
        if negatives:  # every row's negatives in one batch of their own
            batch.update({NEGATIVE + k: v for k, v in self._pad(negatives).items()})
            batch[NEGATIVE + "group"] = torch.tensor([int(g) for f in features for g in f[NEGATIVE + "group"]])
        return batch

    def _pad(self, rows: list[dict]):
        return self.tokenizer.pad(rows, return_tensors="pt", pad_to_multiple_of=self.multiple)


def pair_encoder_class():
    """The training module (built on first use, so importing this file needs no torch)."""
    import torch

    class PairEncoder(torch.nn.Module):
        """Encodes both texts of each pair with one shared encoder and returns (loss, first
        vectors, second vectors); the encoder alone is what the bundle keeps."""

        base_model_prefix = "encoder"

        def __init__(self, encoder, pooling: str, loss: str, scale: float):
            super().__init__()
            self.encoder, self.pooling, self.loss_name, self.scale = encoder, pooling, loss, scale
            self.config = encoder.config

        def embed(self, input_ids, attention_mask, token_type_ids=None):
            extra = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
            out = self.encoder(input_ids=input_ids, attention_mask=attention_mask, **extra)
            return pool(out, attention_mask, self.pooling)

        def activation_checkpointing_enable(self):  # train.gradient_checkpointing (models.checkpoint_activations)

            checkpoint_activations(self.encoder)

        def forward(
            self,
            input_ids,
            attention_mask,
            pair_input_ids,
            pair_attention_mask,
            token_type_ids=None,
            pair_token_type_ids=None,
            labels=None,
            pair_group=None,
            negative_input_ids=None,
            negative_attention_mask=None,
            negative_token_type_ids=None,
            negative_group=None,
        ):
            first = self.embed(input_ids, attention_mask, token_type_ids)
            second = self.embed(pair_input_ids, pair_attention_mask, pair_token_type_ids)
            negatives = None
            if negative_input_ids is not None:
                negatives = self.embed(negative_input_ids, negative_attention_mask, negative_token_type_ids)
            loss = pair_loss(
                self.loss_name, first, second, labels, pair_group, self.scale, negatives, negative_group
            )
            return (loss, first, second)

    return PairEncoder


def plain_text(value) -> str:
    return "" if value is None else str(value)
