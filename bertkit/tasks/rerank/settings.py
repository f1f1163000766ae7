"""The `rerank:` section: the cross-encoder task's own settings (bertkit/tasks/rerank). Its own
module, beside the other task sections, so the task can be added without touching them."""

from __future__ import annotations

from pydantic import Field, field_validator

from bertkit.core.settings import Section


class RerankConfig(Section):
    negative_columns: list[str] = Field(
        ["negatives"],
        description="columns holding each query's negative passages (each a text or a list of texts, e.g. the "
        "`negatives` list `bertkit mine-negatives` writes); when the training data has them, rows are "
        "(query, positive, negatives) groups and the loss is listwise; without them, rows are (query, passage, "
        "label) pairs and the loss is binary cross-entropy",
    )
    # 3: the SQuAD bench's setting (bench/rerank_quality.py, docs/rerank.md): 4 pairs per query keep
    # a CPU run short; more negatives per query were not compared there
    negatives_per_query: int = Field(
        3, ge=1, description="negatives scored with each positive in training and validation (the first ones given)"
    )
    score_max: float | None = Field(
        None,
        gt=0,
        description="(query, passage, label) rows: the top of the label range (labels / score_max is the target); "
        "the data's maximum (at least 1) when null",
    )

    @field_validator("negative_columns", mode="before")
    @classmethod
    def _one_or_several(cls, value):
        return [value] if isinstance(value, str) else value
