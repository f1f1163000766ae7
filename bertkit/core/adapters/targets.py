"""Which layers a LoRA adapter adapts: `auto` takes each family's attention projections (query,
key, value, output) and feed-forward layers, found by their names inside the base model; a list
of names or name endings picks others. The task head (whatever lies outside the base model:
a classifier, a QA span head) is not adapted but trained in full (`head_modules`)."""

from __future__ import annotations

from bertkit.core.errors import BertkitError
from bertkit.core.pooled_head import pooling_of

KEY = "train.adapter.target_modules"

_BERT_LIKE = ("query", "key", "value", "attention.output.dense", "intermediate.dense", "output.dense")
# name endings by model_type, checked on tiny models of each family (tests/test_adapters.py)
FAMILY_TARGETS = {
    "bert": _BERT_LIKE,
    "roberta": _BERT_LIKE,
    "xlm-roberta": _BERT_LIKE,
    "camembert": _BERT_LIKE,
    "electra": _BERT_LIKE,
    "data2vec-text": _BERT_LIKE,
    "distilbert": ("q_lin", "k_lin", "v_lin", "out_lin", "lin1", "lin2"),
    "deberta": ("query_proj", "key_proj", "value_proj", "attention.output.dense", "intermediate.dense", "output.dense"),
    "deberta-v2": (
        "query_proj",
        "key_proj",
        "value_proj",
        "attention.output.dense",
        "intermediate.dense",
        "output.dense",
    ),
    "albert": ("attention.query", "attention.key", "attention.value", "attention.dense", "ffn", "ffn_output"),
    "mpnet": ("attn.q", "attn.k", "attn.v", "attn.o", "intermediate.dense", "output.dense"),
    "modernbert": ("attn.Wqkv", "attn.Wo", "mlp.Wi", "mlp.Wo"),
}


def base_prefix(model) -> str:
    """The base model's name inside `model` ("bert." in a BertForSequenceClassification), or ""
    when `model` is the base model itself (an embed model)."""
    prefix = getattr(model, "base_model_prefix", "")
    return f"{prefix}." if prefix and hasattr(model, prefix) else ""


def linear_layers(model) -> list[str]:
    """The full names of the linear layers of the base model inside `model`."""
    import torch

    prefix = base_prefix(model)
    return [
        name
        for name, module in model.named_modules()
        if isinstance(module, torch.nn.Linear) and name.startswith(prefix) and ".pooler" not in f".{name}"
    ]


def _ends_with(name: str, ending: str) -> bool:
    return name == ending or name.endswith("." + ending)


def target_modules(model, wanted) -> tuple[list[str], list[str]]:
    """(the full names of the layers to adapt, the endings that picked them), for `wanted`: "auto"
    or a list of names or name endings. An unknown family's `auto` takes every linear layer of
    the base model; a list that matches no linear layer there is refused, naming the ones there are."""
    layers = linear_layers(model)
    family = getattr(getattr(model, "config", None), "model_type", None)
    if wanted == "auto":
        endings = list(FAMILY_TARGETS.get(family, ()))
        if not endings:  # not a family measured here: every linear layer of the encoder
            return layers, ["all linear layers"]
    else:
        endings = list(wanted)
    chosen = [name for name in layers if any(_ends_with(name, e) for e in endings)]
    unmatched = [e for e in endings if not any(_ends_with(name, e) for name in layers)]
    if not chosen or (wanted != "auto" and unmatched):
        known = sorted({".".join(n.split(".")[-2:]) for n in layers})
        what = ", ".join(unmatched or endings)
        raise BertkitError(
            f"{KEY}: {what} matches no linear layer of this {family or 'model'} model. Its layers end with: "
            f"{', '.join(known[:24])}{', ...' if len(known) > 24 else ''}. Use some of those, or auto"
        )
    return chosen, endings


def head_modules(model) -> list[str]:
    """The task head, trained in full: the modules outside the base model that hold weights, and
    the base's pooler where a sequence classifier reads [CLS] through it (BERT's, ALBERT's, MPNet's:
    the pooler is the head's first layer there, and frozen it held LoRA back on SST-2, docs/adapters.md)."""
    import torch


    prefix = base_prefix(model)
    if not prefix:
        return []
    head = [
        name for name, child in model.named_children() if name != prefix[:-1] and any(True for _ in child.parameters())
    ]
    pooler = getattr(getattr(model, prefix[:-1]), "pooler", None)
    reads_pooler = type(model).__name__.endswith("ForSequenceClassification") and pooling_of(model) is None
    if reads_pooler and isinstance(pooler, torch.nn.Module) and any(True for _ in pooler.parameters()):
        head.append(f"{prefix}pooler")
    return head
