"""Frozen parts of a model: the embeddings and the lowest encoder layers kept as they are while the
rest trains (`train.freeze_embeddings`, `train.freeze_layers`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertkit.core.errors import BertkitError

if TYPE_CHECKING:
    from bertkit.core.settings import TrainConfig


def freeze(model, train: TrainConfig) -> None:
    """Keep the embeddings and/or the lowest encoder layers fixed, as the config asks."""
    t = train
    if not (t.freeze_embeddings or t.freeze_layers):
        return
    base = getattr(model, model.base_model_prefix, None)
    embeddings = getattr(base, "embeddings", None)
    layers = getattr(getattr(base, "encoder", None), "layer", None)
    if embeddings is None or layers is None:
        raise BertkitError(f"train.freeze_*: not supported for {type(model).__name__}")
    if t.freeze_layers > len(layers):
        raise BertkitError(f"train.freeze_layers: {t.freeze_layers}, but the model has {len(layers)} layers")
    modules = ([embeddings] if t.freeze_embeddings else []) + list(layers[: t.freeze_layers])
    for module in modules:
        for parameter in module.parameters():
            parameter.requires_grad = False
