"""Masked-LM training that runs the vocabulary head only where a token is to be predicted.

A masked-LM model scores every position against the whole vocabulary, yet the loss reads only
the masked ones (about 15%). For a small model that wasted work dominates a step: with 4 layers
of 256 and a 12,000-entry vocabulary the head alone costs as much as the encoder. Two forward
pre-hooks make the model's own forward do the cheap thing while training: one on the model keeps
the labels of the masked positions only, one on its head hands it the hidden states of those
positions only. The loss is the same number; the weights, their names and the saved model are
untouched, and evaluation (which reads the logits of every position) runs the model unchanged.
"""

from __future__ import annotations

from bertkit.tasks.mlm.masking import IGNORE

# model class -> its vocabulary head, for models whose forward scores `head(hidden)` against
# `labels` flattened (the loss then ignores nothing but the IGNORE rows we drop); BertForPreTraining's
# `cls` takes (hidden states, pooled output) and only the first is gathered, so its next-sentence
# head still sees the whole pooled [CLS]
HEADS = {
    "BertForMaskedLM": "cls",
    "BertForPreTraining": "cls",
    "RobertaForMaskedLM": "lm_head",
    "XLMRobertaForMaskedLM": "lm_head",
}


def head_of(model):
    """The vocabulary head of a model this module knows, else None."""
    name = HEADS.get(type(model).__name__)
    return getattr(model, name, None) if name else None


def predict_masked_only(model) -> bool:
    """Make `model` score only the masked positions while it trains; False when its class is not
    one this works for (it then trains as it is)."""
    head = head_of(model)
    if head is None:
        return False
    chosen = {}

    def keep_masked_labels(module, args, kwargs):
        labels = kwargs.get("labels")
        chosen.clear()
        if module.training and labels is not None and labels.dim() == 2:
            chosen["mask"] = labels != IGNORE
            kwargs["labels"] = labels[chosen["mask"]]
        return args, kwargs

    def gather_masked_states(module, args):
        mask = chosen.pop("mask", None)
        if mask is None:
            return None
        return (args[0][mask], *args[1:])

    model.register_forward_pre_hook(keep_masked_labels, with_kwargs=True)
    head.register_forward_pre_hook(gather_masked_states)
    return True
