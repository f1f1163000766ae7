"""Sequence classification over a sentence vector: the classification head reading the unit-length
mean of the tokens (or the unit-length [CLS] vector), the vector a sentence encoder such as MiniLM
was trained to give, instead of the family's own head input (BERT's pooler over [CLS], ...).

classify's contrastive route (tasks/classify/contrastive.py) tunes that vector and fits the head's
last linear layer on it. The model stays the family's `...ForSequenceClassification`, with the same
weights file and config; `config.json` gains `"bertkit_pooling": "mean"` (or "cls"), and every
loading of a model (`models.from_pretrained`) gives such a model this forward pass again, so
predict, evaluate, explain, compare, export and serve run it as they run any classify bundle. The
layers of the family's head before its last linear one (BERT's pooler, RoBERTa's dense) stay in
the file, unused.
"""

from __future__ import annotations

import types

from bertkit.core.errors import BertkitError
from bertkit.core.pooling import l2_normalize, mean_in_token_order

POOLING_KEY = "bertkit_pooling"
POOLINGS = ("mean", "cls")


def pooling_of(model) -> str | None:
    """The sentence-vector pooling a loaded model's config asks for, or None (the family's head)."""
    return getattr(getattr(model, "config", None), POOLING_KEY, None)


def use_pooling(model, pooling: str) -> None:
    """Make `model` (a sequence-classification model) classify from its `pooling` sentence vector,
    now and whenever it is loaded again from what it saves."""
    if pooling not in POOLINGS:
        raise ValueError(f"pooling {pooling!r}: one of {', '.join(POOLINGS)}")
    setattr(model.config, POOLING_KEY, pooling)
    restore(model)


def restore(model):
    """Give a freshly loaded model the forward pass its config asks for (none asked: unchanged)."""
    pooling = pooling_of(model)
    kind = type(model).__name__
    if pooling is None or not kind.endswith("ForSequenceClassification") or kind.startswith("Peft"):
        # a config, a tokenizer, the bare encoder (embed reads its tokens itself), or a peft wrapper
        # (the model inside it is the one to give the forward pass)
        return model
    if pooling not in POOLINGS:

        raise BertkitError(
            f"config.json: '{POOLING_KEY}': {pooling!r} is not a pooling bertkit knows ({', '.join(POOLINGS)}); "
            "train the model again, or remove the key to use the family's own classification head"
        )
    model.forward = types.MethodType(_forward, model)
    return model


def head_name(model) -> str:
    """The qualified name of the head's last linear layer (one output a label)."""
    import torch

    n_labels = model.config.num_labels
    names = [n for n, m in model.named_modules() if isinstance(m, torch.nn.Linear) and m.out_features == n_labels]
    if not names:

        raise BertkitError(
            f"{type(model).__name__}: no linear layer gives one output a label ({n_labels}), so there is no "
            "classification head to read a sentence vector"
        )
    return names[-1]


def sentence_vectors(out, attention_mask, pooling: str):
    """Unit-length sentence vectors of a base model's output."""

    hidden = out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]
    vectors = hidden[:, 0] if pooling == "cls" else mean_in_token_order(out, attention_mask)
    return l2_normalize(vectors)


def _forward(
    self,
    input_ids=None,
    attention_mask=None,
    token_type_ids=None,
    position_ids=None,
    inputs_embeds=None,
    labels=None,
    output_attentions=None,
    output_hidden_states=None,
    return_dict=None,
    **kwargs,
):
    import torch
    from transformers.modeling_outputs import SequenceClassifierOutput

    given = {"token_type_ids": token_type_ids, "position_ids": position_ids}
    given.update(output_attentions=output_attentions, output_hidden_states=output_hidden_states)
    extra = {k: v for k, v in given.items() if v is not None}
    out = self.base_model(input_ids=input_ids, attention_mask=attention_mask, inputs_embeds=inputs_embeds, **extra)
    if attention_mask is None:
        shape = input_ids.shape if input_ids is not None else inputs_embeds.shape[:2]
        device = input_ids.device if input_ids is not None else inputs_embeds.device
        attention_mask = torch.ones(shape, dtype=torch.long, device=device)
    head = self.get_submodule(_head_name(self))  # looked up each time: int8 export swaps the layer
    logits = head(sentence_vectors(out, attention_mask, self.config.bertkit_pooling))
    loss = None if labels is None else _loss(self.config.problem_type, logits, labels)
    return SequenceClassifierOutput(
        loss=loss,
        logits=logits,
        hidden_states=getattr(out, "hidden_states", None),
        attentions=getattr(out, "attentions", None),
    )


def _head_name(model) -> str:
    name = model.__dict__.get("_bertkit_head")  # a swapped layer keeps its name
    if name is None:
        name = model.__dict__["_bertkit_head"] = head_name(model)
    return name


def _loss(problem_type: str | None, logits, labels):
    import torch.nn.functional as F

    if problem_type == "multi_label_classification":
        return F.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))
    if problem_type == "regression":
        return F.mse_loss(logits.squeeze(-1), labels.to(logits.dtype).squeeze(-1))
    return F.cross_entropy(logits.view(-1, logits.shape[-1]), labels.view(-1))
