"""The `ner:` section: the settings of named-entity recognition (bertkit/tasks/ner)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from bertkit.core.settings import LossName, Section, Weights, gamma_field, loss_field


class NerConfig(Section):
    scheme: Literal["auto", "IOB1", "IOB2", "BIOES", "BILOU"] = Field(
        "auto", description="tagging scheme of the data (IOB1 is CoNLL-2003's); detected when auto"
    )
    token_column: int = Field(0, description="CoNLL files: column of the token (0 = first)")
    tag_column: int = Field(-1, description="CoNLL files: column of the tag (-1 = last)")
    tokens_field: str = Field("tokens", description="JSON data: field with the list of tokens")
    tags_field: str = Field("tags", description="JSON data: field with the list of tags (or tag ids)")
    entities_field: str = Field("entities", description="span data: field with the entities of data.text_column")
    start_field: str = Field("start", description="span data: entity start (character offset)")
    end_field: str = Field("end", description="span data: entity end (character offset, exclusive)")
    type_field: str = Field("type", description="span data: entity type")
    span_field: str | None = Field(
        None, description="span data: field with [start, end] in one list (Stockmark's 'span'), instead of the two"
    )
    label_all_subwords: bool = Field(
        False, description="label every sub-word of a word (B- becomes I-), not only the first"
    )
    stride: int = Field(32, ge=0, description="sub-word tokens shared by consecutive windows of a long sentence")
    class_weights: Weights = Field(
        None,
        description="weigh the loss per tag (imbalanced data): 'balanced' (inverse frequency of each tag in "
        "the training sub-words), a list in the order of the tags bertkit.json records (O, B-X, I-X, ... by "
        "type), {tag or type: weight} (others weigh 1), or null",
    )
    loss: LossName = loss_field()
    focal_gamma: float = gamma_field()

