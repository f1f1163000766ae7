"""The `embed:` section: the settings of sentence embeddings (bertkit/tasks/embed)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from bertkit.core.settings import Section


class EmbedConfig(Section):
    pooling: Literal["mean", "cls", "max", "pooler"] = Field(
        "mean", description="how token vectors become one sentence vector"
    )
    normalize: bool = Field(True, description="L2-normalise the sentence vectors the bundle produces")
    loss: Literal["auto", "in_batch", "cosine", "cosent"] = Field(
        "auto",
        description="auto: in_batch for (anchor, positive) pairs, cosent for scored pairs; cosine: MSE on cosine",
    )
    scale: float = Field(20.0, gt=0, description="in_batch and cosent: similarity scale (inverse temperature)")
    score_max: float | None = Field(
        None,
        gt=0,
        description="scored pairs: the top of the score range (e.g. 5 for STS); the data's maximum when null",
    )
    pair_max_length: int | None = Field(
        None, ge=8, description="longest second text (e.g. a passage) in tokens; model.max_length when null"
    )

